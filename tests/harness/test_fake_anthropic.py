"""The fake Messages API speaks like the real one (so the real CLI can talk to it)."""

from __future__ import annotations

import json

import httpx

from tests.fakes.fake_anthropic import FakeAnthropic, unwrap_pasted


def test_stream_json_head_and_count_tokens() -> None:
    with FakeAnthropic() as api, httpx.Client(base_url=api.url) as client:
        assert client.head("/").status_code == 200
        assert client.head("/api/hello").status_code == 200
        body = {
            "model": "m",
            "max_tokens": 10,
            "stream": True,
            "tools": [{"name": "t"}],
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                        {"type": "text", "text": "hello"},
                    ],
                }
            ],
        }
        streamed = client.post("/v1/messages?beta=true", json=body)
        assert streamed.headers["content-type"].startswith("text/event-stream")
        events = [line[7:] for line in streamed.text.splitlines() if line.startswith("event: ")]
        assert events == [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
        plain = client.post("/v1/messages", json={**body, "stream": False}).json()
        assert plain["type"] == "message" and plain["content"][0]["text"].startswith("FAKE")
        counted = client.post("/v1/messages/count_tokens", json=body).json()
        assert counted["input_tokens"] > 0
        assert client.post("/v1/other", json={}).status_code == 404
        assert api.user_prompts() == ["hello", "hello"]
        assert api.snapshot()[2].query == "beta=true"
        assert json.loads(json.dumps(api.snapshot()[2].body)) == body


def test_unwrap_pasted() -> None:
    wrapped = '\n\n<pasted_content id="666f">\nline 1\n  line 2\n</pasted_content id="666f">\n'
    assert unwrap_pasted(wrapped) == "line 1\n  line 2"
    assert unwrap_pasted("plain") == "plain"
