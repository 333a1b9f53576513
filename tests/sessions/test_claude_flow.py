"""The whole work-item flow once with the real Claude Code CLI against the fake Anthropic API:
spawn, follow-up comment, the tmux session killed → respawn with --resume, close."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes import payloads as P
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(300),
]
REF = "github:octo/repo#15"
TARGET = "loop-github-octo-repo-15"


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def answered(api: FakeAnthropic, text: str) -> bool:
    return any(text in (r.prompt or "") for r in api.conversation_requests())


def test_claude_work_item_flow(work: Work, api: FakeAnthropic) -> None:
    env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(work.env.root / "home")}
    work.env.write_config(
        harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": env}},
        routing={"defaultHarness": "claude", "authorizedUsers": ["alice"]},
        tmux={"resumeProbeSeconds": 3},
    )
    r = work.dispatch("issue_comment", P.issue_comment_event("the-loop do count the stars"), "c1")
    assert "spawned" in r.stdout, r.stdout + r.stderr
    sid = work.session_json(REF)["id"]
    wait_until(lambda: answered(api, "count the stars"), 90, what="the spawn prompt")

    work.dispatch("issue_comment", P.issue_comment_event("also the planets"), "c2")
    wait_until(lambda: answered(api, "also the planets"), 90, what="the follow-up")

    assert work.tmux("kill-session", "-t", f"={TARGET}").returncode == 0
    r = work.dispatch("issue_comment", P.issue_comment_event("and the moons"), "c3")
    assert r.exit_code == 0, r.stdout
    wait_until(lambda: answered(api, "and the moons"), 90, what="the message after respawn")
    assert work.events("session.respawned")[-1]["payload"]["resumed"] is True
    assert work.session_json(REF)["harnessSessionId"] == sid
    # the request that carried the message after the respawn carried the turns before it (a
    # late retry of an earlier request may arrive after it: not the last one, then)
    carried = [
        "\n".join(r.user_texts())
        for r in api.conversation_requests()
        if "and the moons" in "\n".join(r.user_texts())
    ]
    assert carried, "no conversation request carried the message after the respawn"
    texts = carried[-1]
    assert "count the stars" in texts and "also the planets" in texts

    closed = work.dispatch("issues", P.issues_event("closed", state="closed"), "c4")
    assert "issue-closed" in closed.stdout
    wait_until(lambda: work.pane_dead(TARGET) == "1", timeout=30, what="the agent to exit")
    assert work.session_json(REF)["status"] == "closed"
