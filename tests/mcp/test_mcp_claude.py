"""The real Claude Code as an MCP client of the daemon, added the way docs/mcp.md says
(``claude mcp add --transport http the-loop URL --header "Authorization: Bearer TOKEN"``), its
model the fake Messages API asking for the-loop's tools: it lists the sessions and says to one
with the full token; with the read-only token the say is refused and nothing reaches the
agent."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUse
from tests.harness.agent_clis import CLAUDE_BIN
from tests.work import Work

pytestmark = [pytest.mark.claude]


def _asks(sid: str) -> Reply:
    """The model: a tool's result is answered with its text; a prompt naming a tool's verb
    asks for that tool of the server the prompt names; anything else gets plain text."""

    def reply(r: RecordedRequest) -> Any:
        if r.answers_a_tool:
            (result,) = [b for b in r.messages[-1]["content"] if b.get("type") == "tool_result"]
            return f"TOOL-SAID: {json.dumps(result.get('content'))}"
        # each run is a conversation of one prompt (Claude Code may add reminders after it)
        words = json.dumps([m for m in r.messages if m.get("role") == "user"])
        server = "the-loop-ro" if "READ-ONLY" in words else "the-loop"
        if "LIST them" in words:
            return ToolUse(f"mcp__{server}__list_sessions", {}, id="toolu_mcp_list")
        if "say it" in words:
            args = {"session": sid, "text": f"hello over {server}", "actor": "claude-mcp"}
            return ToolUse(f"mcp__{server}__say_to_session", args, id="toolu_mcp_say")
        return "PLAIN"

    return reply


def _claude(home: Path, api: FakeAnthropic, *args: str) -> str:
    env = {"PATH": os.environ["PATH"], **api.claude_env(home / "config"), "HOME": str(home)}
    done = subprocess.run(
        [str(CLAUDE_BIN), *args], cwd=home, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_claude_code_added_as_the_docs_say_lists_and_says_over_mcp(
    work: Work, tmp_path: Path
) -> None:
    daemon = Daemon(work)
    daemon.start(THE_LOOP_READONLY_TOKEN="ro-token-for-claude-mcp")
    try:
        started = daemon.api("POST", "/sessions", json={"ref": "local:mcp", "prompt": "tok-mcp"})
        assert started.status_code == 200, started.text
        sid = started.json()["sessionId"]
        work.wait_prompts(sid, 1)
        with FakeAnthropic(reply=_asks(sid)) as api:
            url = f"{daemon.url}/mcp"
            for name, token in (
                ("the-loop", daemon.token),
                ("the-loop-ro", "ro-token-for-claude-mcp"),
            ):
                auth = f"Authorization: Bearer {token}"
                _claude(
                    tmp_path, api, "mcp", "add", "--transport", "http", name, url, "--header", auth
                )
            checked = _claude(tmp_path, api, "mcp", "list")  # as a person checks it
            assert checked.count("Connected") == 2, checked
            listed = _claude(
                tmp_path, api, "-p", "LIST them", "--allowedTools", "mcp__the-loop__list_sessions"
            )
            assert sid in listed and "local:mcp" in listed, listed
            refused = _claude(
                tmp_path,
                api,
                "-p",
                "READ-ONLY say it",
                "--allowedTools",
                "mcp__the-loop-ro__say_to_session",
            )
            assert "forbidden: the read-only token cannot change anything" in refused, refused
            said = _claude(
                tmp_path, api, "-p", "say it", "--allowedTools", "mcp__the-loop__say_to_session"
            )
            assert '\\"ok\\":true' in said.replace(" ", ""), said
        texts = work.wait_prompts(sid, 2)
        assert (
            "Message from claude-mcp (operator)" in texts[1] and "hello over the-loop" in texts[1]
        )
        assert not any("the-loop-ro" in t for t in texts), texts
    finally:
        daemon.stop()
