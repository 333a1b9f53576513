"""A fake Anthropic Messages API on loopback, faithful enough for the real Claude Code CLI.

Real HTTP (``ThreadingHTTPServer`` in a background thread). It answers ``HEAD /``,
``HEAD|GET /api/hello``, ``POST /v1/messages`` (streamed as server-sent events exactly like
the real API when ``stream`` is true, one JSON message otherwise) and
``POST /v1/messages/count_tokens``; anything else gets the API's JSON error shape with 404.
Every request is recorded (method, path, headers, parsed JSON body).

Each new prompt makes the CLI send a short *title* request besides the conversation request;
``conversation_requests`` leaves those out (they carry no tools), so tests check prompts with
``user_prompts()`` / ``last_user_text()``.

Usage::

    with FakeAnthropic() as api:
        env = api.claude_env(config_dir)
        ...
        wait_until(lambda: "hello" in api.user_prompts())
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.fakes.loopback import LoopbackServer

PLACEHOLDER_KEY = "sk-ant-api03-fake-key-for-tests-0000000000000000000000000000000000000000000AA"
DEFAULT_MODEL = "claude-sonnet-4-5"


@dataclass(frozen=True)
class ToolUse:
    """An assistant turn that asks to run tool NAME with INPUT (``stop_reason: tool_use``)."""

    name: str
    input: dict[str, Any]
    id: str = "toolu_fake_0001"
    text: str = ""


@dataclass(frozen=True)
class ApiError:
    """An answer of the API's error shape: STATUS with ``{"type": "error", "error": {TYPE,
    MESSAGE}}`` (401 ``authentication_error``, 429 ``rate_limit_error``, …)."""

    status: int
    type: str
    message: str


Reply = Callable[["RecordedRequest"], "str | ToolUse | ApiError"]
UsageOf = Callable[["RecordedRequest"], "dict[str, int] | None"]
"""Known usage figures for a request (``input_tokens``, ``output_tokens``,
``cache_creation_input_tokens``, ``cache_read_input_tokens``); None: the default estimate."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake received."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    seq: int

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path == "/v1/messages"

    @property
    def is_conversation(self) -> bool:
        """A conversation turn (it offers tools); title and other side requests do not."""
        return self.is_messages and isinstance(self.body, dict) and bool(self.body.get("tools"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        return list(self.body.get("messages") or [])

    def user_texts(self) -> list[str]:
        """The prompt text of every user message of this request, in order (system reminders
        and tool results left out, Claude Code's ``<pasted_content>`` wrapper removed)."""
        texts = [_user_text(m) for m in self.messages if m.get("role") == "user"]
        return [t for t in texts if t is not None]

    def tool_results(self) -> list[dict[str, Any]]:
        """Every ``tool_result`` block the CLI sent back in this request, in order."""
        return [
            block
            for m in self.messages
            if m.get("role") == "user" and isinstance(m.get("content"), list)
            for block in m["content"]
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]

    @property
    def answers_a_tool(self) -> bool:
        """Whether the newest user message carries a tool's result (the turn goes on)."""
        last = self.messages[-1] if self.messages else {}
        content = last.get("content")
        return isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        )

    @property
    def prompt(self) -> str | None:
        """The newest user prompt of this request."""
        texts = self.user_texts()
        return texts[-1] if texts else None


_PASTED = re.compile(r'\s*<pasted_content id="([^"]+)">\n(.*)\n</pasted_content id="\1">\s*', re.S)


def unwrap_pasted(text: str) -> str:
    """TEXT without the ``<pasted_content id=...>`` wrapper the CLI puts around a paste."""
    match = _PASTED.fullmatch(text)
    return match.group(2) if match else text


def _user_text(message: dict[str, Any]) -> str | None:
    content = message.get("content")
    if isinstance(content, str):
        return unwrap_pasted(content)
    texts = [
        str(block.get("text", ""))
        for block in content or []
        if isinstance(block, dict) and block.get("type") == "text"
    ]
    texts = [t for t in texts if not t.lstrip().startswith("<system-reminder>")]
    return unwrap_pasted("".join(texts)) if texts else None


def default_reply(request: RecordedRequest) -> str:
    """The assistant's answer: names the request number and the prompt's size."""
    size = len(request.prompt or "")
    return f"FAKE-REPLY-{request.seq} ({size} chars received)"


@dataclass
class FakeAnthropic(LoopbackServer):
    """The fake API server. Start with ``start()`` or a ``with`` block; ``url`` is its base."""

    reply: Reply = default_reply
    model: str = DEFAULT_MODEL
    usage: UsageOf | None = None
    requests: list[RecordedRequest] = field(default_factory=list)
    sent_usage: dict[int, dict[str, int]] = field(default_factory=dict)
    """The usage each answered messages request (by ``seq``) carried."""

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        return _Handler

    @property
    def url(self) -> str:
        return self.origin

    def claude_env(self, config_dir: Path) -> dict[str, str]:
        """The environment that points the real ``claude`` at this fake, offline and quiet."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": PLACEHOLDER_KEY,
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
        }

    def record(
        self, method: str, target: str, headers: dict[str, str], body: Any
    ) -> RecordedRequest:
        parts = urlsplit(target)
        with self._lock:
            request = RecordedRequest(
                method, parts.path, parts.query, headers, body, next(self._seq)
            )
            self.requests.append(request)
        return request

    def snapshot(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self.requests)

    def conversation_requests(self) -> list[RecordedRequest]:
        """Conversation turns only (title and other side requests left out)."""
        return [r for r in self.snapshot() if r.is_conversation]

    def user_prompts(self) -> list[str]:
        """The newest user prompt of each conversation request, in arrival order."""
        return [r.prompt for r in self.conversation_requests() if r.prompt is not None]

    def last_conversation_request(self) -> RecordedRequest | None:
        requests = self.conversation_requests()
        return requests[-1] if requests else None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeAnthropic
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # like a real server: no 40 ms delayed-ACK stalls

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return

    def _headers_dict(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _read_body(self) -> Any:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def do_HEAD(self) -> None:
        self.fake.record("HEAD", self.path, self._headers_dict(), None)
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        request = self.fake.record("GET", self.path, self._headers_dict(), None)
        if request.path in ("/", "/api/hello"):
            self._json(200, {"ok": True})
        else:
            self._not_found()

    def do_POST(self) -> None:
        request = self.fake.record("POST", self.path, self._headers_dict(), self._read_body())
        if request.path == "/v1/messages":
            self._messages(request)
        elif request.path == "/v1/messages/count_tokens":
            self._json(200, {"input_tokens": _estimate_tokens(request.body)})
        else:
            self._not_found()

    def _not_found(self) -> None:
        self._json(
            404, {"type": "error", "error": {"type": "not_found_error", "message": "not found"}}
        )

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_fake")
        self.end_headers()
        self.wfile.write(data)

    def _messages(self, request: RecordedRequest) -> None:
        body = request.body if isinstance(request.body, dict) else {}
        answer = self.fake.reply(request)
        if isinstance(answer, ApiError):
            error = {"type": answer.type, "message": answer.message}
            self._json(answer.status, {"type": "error", "error": error})
            return
        text = answer if isinstance(answer, str) else answer.text
        tool = None if isinstance(answer, str) else answer
        model = str(body.get("model") or self.fake.model)
        message_id = f"msg_fake_{request.seq:06d}"
        usage_in = _estimate_tokens(body)
        known = self.fake.usage(request) if self.fake.usage is not None else None
        full = dict(known) if known else _usage(usage_in, max(1, len(text) // 4))
        with self.fake._lock:
            self.fake.sent_usage[request.seq] = full
        if not body.get("stream"):
            message = _full_message(message_id, model, text, usage_in, tool)
            message["usage"] = full
            self._json(200, message)
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", "req_fake")
        self.send_header("connection", "close")
        self.end_headers()
        for event, data in _stream_events(message_id, model, text, usage_in, tool, known):
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True


def _estimate_tokens(body: Any) -> int:
    return max(1, len(json.dumps(body)) // 4) if body else 1


def _usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _full_message(
    message_id: str, model: str, text: str, usage_in: int, tool: ToolUse | None = None
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text or not tool else []
    if tool is not None:
        content.append({"type": "tool_use", "id": tool.id, "name": tool.name, "input": tool.input})
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if tool else "end_turn",
        "stop_sequence": None,
        "usage": _usage(usage_in, max(1, len(text) // 4)),
    }


def _text_block(index: int, text: str) -> list[tuple[str, dict[str, Any]]]:
    half = len(text) // 2
    return [
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        ("ping", {"type": "ping"}),
        *[
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": part},
                },
            )
            for part in (text[:half], text[half:])
            if part
        ],
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _tool_block(index: int, tool: ToolUse) -> list[tuple[str, dict[str, Any]]]:
    start = {"type": "tool_use", "id": tool.id, "name": tool.name, "input": {}}
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": json.dumps(tool.input)},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _stream_events(
    message_id: str,
    model: str,
    text: str,
    usage_in: int,
    tool: ToolUse | None = None,
    known: dict[str, int] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """The server-sent events of one answer. With KNOWN usage, ``message_start`` carries its
    input and cache figures (output 1, as the API does) and ``message_delta`` all of them."""
    start = _full_message(message_id, model, "", usage_in)
    start.update(content=[], stop_reason=None, usage=_usage(usage_in, 1))
    final: dict[str, int] = {"output_tokens": max(1, len(text) // 4)}
    if known:
        start["usage"] = {**known, "output_tokens": 1}
        final = dict(known)
    blocks = _text_block(0, text) if text or tool is None else []
    if tool is not None:
        blocks += _tool_block(1 if blocks else 0, tool)
    return [
        ("message_start", {"type": "message_start", "message": start}),
        *blocks,
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use" if tool else "end_turn", "stop_sequence": None},
                "usage": final,
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
