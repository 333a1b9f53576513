"""A standing session of the real Claude Code CLI against the fake Anthropic API: create, say,
stop, start — the resumed agent sends the earlier conversation again."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.standing.conftest import Standing

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(300),
]


PROBE = 60.0


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def answered(api: FakeAnthropic, text: str) -> bool:
    """True once a conversation request whose newest prompt contains TEXT was made."""
    return any(text in (r.prompt or "") for r in api.conversation_requests())


def screen_after(st: Standing, text: str) -> str:
    """The agent's screen after the last line that shows TEXT ("" before it shows)."""
    shown = st.tmux("capture-pane", "-p", "-J", "-t", "=loop-standing-probe:").stdout
    return shown.rsplit(text, 1)[1] if text in shown else ""


def test_claude_standing_session_resumes_its_conversation(st: Standing, api: FakeAnthropic) -> None:
    home = st.env.root / "home"
    env = {**api.claude_env(st.env.root / "claude-config"), "HOME": str(home)}
    st.configure(
        harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": env}},
        routing={"defaultHarness": "claude"},
        tmux={"resumeProbeSeconds": PROBE},
    )
    created = st.ok("standing", "create", "probe", "--prompt", "brief: count the stars")
    assert "probe: started" in created.stdout
    conversation = st.conversation("probe")
    wait_until(lambda: answered(api, "count the stars"), 90, what="the boot prompt")

    st.ok("standing", "say", "probe", "--text", "first message", "--actor", "alice")
    wait_until(lambda: answered(api, "first message"), 90, what="the first message")
    wait_until(  # the turn is over (its reply is on the screen) before the agent is stopped
        lambda: "FAKE-REPLY-" in screen_after(st, "first message"), 90, what="the reply"
    )
    st.ok("standing", "stop", "probe")
    assert not st.has_session("loop-standing-probe")

    began = time.monotonic()
    assert "probe: resumed" in st.ok("standing", "start", "probe").stdout
    # the resume probe ends once the resumed agent shows its input box, not after PROBE s
    assert time.monotonic() - began < PROBE / 2
    assert st.conversation("probe") == conversation
    st.ok("standing", "say", "probe", "--text", "after the restart", "--actor", "bob")
    wait_until(lambda: answered(api, "after the restart"), 90, what="the message after restart")

    last = api.last_conversation_request()
    assert last is not None
    texts = last.user_texts()
    assert "brief: count the stars" in texts[0] and texts[0].startswith("You are probe")
    assert texts[1:] == [
        "Message from alice to standing session `probe`:\n\nfirst message",
        "Message from bob to standing session `probe`:\n\nafter the restart",
    ]
    assert last.body["metadata"]["user_id"].count(conversation) == 1


def _asks_to_run(r: RecordedRequest) -> ToolUse | str:
    if r.answers_a_tool:
        return "DONE-AFTER-TOOL"
    if "RUN" in (r.prompt or ""):
        return ToolUse(
            "Bash", {"command": "touch ran.txt", "description": "make a file"}, id="toolu_run"
        )
    return "FAKE-REPLY"


def test_a_standing_agent_lost_while_it_asks_reads_exited_and_its_prompt_closes(
    st: Standing,
) -> None:
    """Its tmux session killed while a permission prompt waits: the daemon's reconciler tells
    it once (``standing.exited``, its record ``stopped``, attention ``exited``: Claude Code's
    own SessionEnd hook may say so first), the prompt closes as ``gone`` and leaves the
    attention list, a late ``allow`` is told it is stale, and ``start`` resumes."""
    with FakeAnthropic(reply=_asks_to_run) as api:
        home = st.env.root / "home"
        env = {**api.claude_env(st.env.root / "claude-config"), "HOME": str(home)}
        st.configure(
            harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": env}},
            routing={"defaultHarness": "claude"},
            enabled=True,
        )
        assert st.env.run("start").exit_code == 0
        try:
            st.ok("standing", "create", "probe", "--prompt", "brief: wait")
            st.ok("standing", "say", "probe", "--text", "please RUN it")
            key = "standing:probe"
            asked = wait_until(
                lambda: [a for a in _attention(st) if a["agent"] == key], 90, what="the prompt"
            )[0]
            assert asked["state"] == "needs-permission", asked
            st.tmux("kill-session", "-t", "=loop-standing-probe")
            wait_until(lambda: st.events("standing.exited"), 30, what="standing.exited")
            told = st.ok("attention", "explain", key).stdout  # the reconciler's, or the hook's
            assert told.startswith(f"{key}: exited"), told
            assert st.listed()["probe"]["status"] == "stopped"
            assert not [a for a in _attention(st) if a["agent"] == key]
            late = st.cli("allow", asked["prompt"]["id"])
            assert late.exit_code != 0 and "no longer pending (gone)" in late.stderr, late
            assert [e["payload"]["pane"] for e in st.events("standing.exited")] == ["absent"]
            assert "probe: resumed" in st.ok("standing", "start", "probe").stdout
            assert len(st.events("standing.exited")) == 1  # told once
        finally:
            st.env.run("stop")


def _attention(st: Standing) -> list[dict[str, Any]]:
    return json.loads(st.ok("attention", "--format", "json").stdout)  # type: ignore[no-any-return]
