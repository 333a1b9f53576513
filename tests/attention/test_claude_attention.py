"""The real Claude Code CLI under the daemon, against the fake Messages API and the fake GitHub
(polled): its hooks report working → waiting; a tool use that needs permission shows as
needs-permission naming the tool; one notice mentioning the requester is posted; an
unauthorized allow changes nothing; an authorized ``the-loop allow`` lets the tool run (the
fake API receives its result); a second allow is refused as stale; a deny refuses the tool."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.claude_daemon import start_claude_daemon
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
REPO = "octo/repo"
REF = "github:127.0.0.1/octo/repo#1"


def reply(request: RecordedRequest) -> str | ToolUse:
    """Tool uses on demand (RUN-TOOL-N in the newest prompt), plain answers otherwise."""
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return f"DONE-AFTER-TOOL-{request.seq}"
    prompt = request.prompt or ""
    for n in (1, 2):
        if f"RUN-TOOL-{n}" in prompt:
            command = f"touch tool-{n}-ran.txt && echo ran-{n}"
            return ToolUse("Bash", {"command": command, "description": f"tool {n}"}, f"toolu_{n}")
    return f"FAKE-REPLY-{request.seq}"


@pytest.fixture
def setup(work: Work, loop_env: Env) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic]]:
    with FakeGitHub() as gh, FakeAnthropic(reply=reply) as api:
        daemon = start_claude_daemon(
            work,
            loop_env,
            gh,
            api,
            ["alice", "carol"],
            attention={"notifyAfterSeconds": 1, "pollSeconds": 0.1},
        )
        gh.add_comment(REPO, 1, "the-loop do say hello", author="alice")
        try:
            yield daemon, gh, api
        finally:
            daemon.stop()


def attention_of(daemon: Daemon) -> dict[str, Any]:
    found = daemon.api("GET", f"/attention/{quote(REF, safe=':/')}")
    return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]


def wait_state(
    daemon: Daemon, state: str, timeout: float = 90, signal: str | None = None
) -> dict[str, Any]:
    def seen() -> dict[str, Any] | None:
        found = attention_of(daemon)
        if found.get("state") != state or (signal and found.get("signal") != signal):
            return None
        return found

    return wait_until(seen, timeout, what=state)  # type: ignore[no-any-return]


def comments(gh: FakeGitHub, text: str) -> list[str]:
    return [c["body"] for c in gh.comments(REPO, 1) if text in c["body"]]


def tool_results(api: FakeAnthropic, tool_id: str) -> list[dict[str, Any]]:
    last = api.last_conversation_request()
    results = last.tool_results() if last else []
    return [r for r in results if r.get("tool_use_id") == tool_id]


def workspace(daemon: Daemon) -> Path:
    cwd = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["cwd"]
    return Path(cwd)


def changes(daemon: Daemon) -> list[str]:
    found = daemon.api("GET", "/events", params={"type": "session.attention_changed", "limit": 500})
    return [e["payload"]["to"] for e in found.json()]


def test_claude_hooks_permission_notice_allow_stale_deny(
    setup: tuple[Daemon, FakeGitHub, FakeAnthropic],
) -> None:
    daemon, gh, api = setup
    first = wait_state(daemon, "waiting", 120, "claude-hook:Stop")
    assert first["signal"] == "claude-hook:Stop" and "FAKE-REPLY" in first["lastMessage"]
    assert "working" in changes(daemon)

    gh.add_comment(REPO, 1, "please RUN-TOOL-1 now", author="alice")
    asked = wait_state(daemon, "needs-permission")
    prompt = asked["prompt"]
    assert prompt["tool"] == "Bash" and "tool-1-ran" in prompt["text"]
    assert [row["workItem"] for row in daemon.api("GET", "/attention").json()] == [REF]
    notice = wait_until(lambda: comments(gh, prompt["id"]), 10, what="the notice")
    assert len(notice) == 1 and "@alice" in notice[0] and "Bash" in notice[0]

    gh.add_comment(REPO, 1, f"the-loop allow {prompt['id']}", author="mallory")
    wait_until(
        lambda: daemon.api("GET", "/events", params={"type": "route.unauthorized"}).json(),
        20,
        what="the unauthorized allow",
    )
    assert attention_of(daemon)["state"] == "needs-permission"
    assert not tool_results(api, "toolu_1")

    gh.add_comment(REPO, 1, f"the-loop allow {prompt['id']}", author="alice")
    wait_until(lambda: tool_results(api, "toolu_1"), 30, what="the tool result")
    assert tool_results(api, "toolu_1")[0]["is_error"] is False
    assert (workspace(daemon) / "tool-1-ran.txt").exists()
    done = wait_state(daemon, "waiting", signal="claude-hook:Stop")
    assert "DONE-AFTER-TOOL" in done["lastMessage"]
    assert changes(daemon)[-3:] == ["needs-permission", "working", "waiting"]

    gh.add_comment(REPO, 1, f"the-loop allow {prompt['id']}", author="alice")
    stale = wait_until(lambda: comments(gh, "stale"), 20, what="the stale refusal")
    assert "already allowed by alice" in stale[0]

    gh.add_comment(REPO, 1, "now RUN-TOOL-2 please", author="alice")
    second = wait_state(daemon, "needs-permission")["prompt"]
    assert second["id"] != prompt["id"]
    wait_until(lambda: comments(gh, second["id"]), 10, what="the second notice")
    gh.add_comment(REPO, 1, "the-loop deny", author="carol")
    wait_until(lambda: tool_results(api, "toolu_2"), 30, what="the denied tool's result")
    assert tool_results(api, "toolu_2")[0]["is_error"] is True
    assert not (workspace(daemon) / "tool-2-ran.txt").exists()
    wait_state(daemon, "waiting")

    assert len(comments(gh, f"permission to run **Bash** (prompt `{prompt['id']}`)")) == 1
    followups = wait_until(lambda: comments(gh, "was denied by carol"), 10, what="follow-up")
    assert len(followups) == 1
    assert len(comments(gh, f"`{prompt['id']}` was allowed by alice")) == 1
    listed = json.dumps(daemon.api("GET", "/attention").json())
    assert listed == "[]"
