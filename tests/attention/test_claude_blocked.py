"""An agent that cannot work is told, not hidden: the real Claude Code with no key and no
login says "Not logged in" in its pane; the session's attention becomes ``blocked`` with that
reason, the requester gets one notice on the ticket, `status` counts it, `doctor` says the
harness has no login, and a comment sent meanwhile waits instead of being lost in the pane."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.attention.test_claude_attention import REPO, attention_of, comments, reply, wait_state
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_github import FakeGitHub
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.skipif(not CLAUDE_BIN.exists(), reason=f"no Claude Code CLI at {CLAUDE_BIN}"),
]


@pytest.fixture
def blocked_daemon(work: Work, loop_env: Env) -> Iterator[tuple[Daemon, FakeGitHub]]:
    attention = {"notifyAfterSeconds": 1, "pollSeconds": 0.1}
    with claude_item(
        work, loop_env, reply, ["alice"], first=None, logged_in=False, attention=attention
    ) as (daemon, gh, _):
        yield daemon, gh


def test_not_logged_in_is_blocked_told_counted_and_holds_messages(
    blocked_daemon: tuple[Daemon, FakeGitHub],
) -> None:
    daemon, gh = blocked_daemon
    gh.add_comment(REPO, 1, "the-loop do say hello", author="alice")
    stuck = wait_state(daemon, "blocked", 90)
    assert "Not logged in" in stuck["prompt"]["text"] and stuck["signal"] == "screen"
    notice = wait_until(lambda: comments(gh, "cannot work"), 20, what="the notice")
    assert len(notice) == 1 and "@alice" in notice[0] and "Not logged in" in notice[0]

    status = json.loads(daemon.work.cli("status", "--format", "json").stdout)
    assert status["attention"] == {"blocked": 1}
    listed = daemon.api("GET", "/attention").json()
    assert [row["state"] for row in listed] == ["blocked"]
    dashboard, _ = logged_in(daemon, daemon.token)  # its page says why, not "Question: …"
    page = dashboard.get(f"/sessions/{listed[0]['sessionId']}").text
    assert "Cannot work: " in page and "Question: " not in page

    doctor = daemon.work.cli("doctor", "--format", "json")
    login = [c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "harness claude login"]
    assert login and login[0]["status"] == "warning" and "no key" in login[0]["detail"]

    gh.add_comment(REPO, 1, "WAIT-FOR-LOGIN please", author="alice")
    held = wait_until(
        lambda: daemon.api("GET", "/events", params={"type": "session.held"}).json(),
        30,
        what="the held comment",
    )
    assert "cannot work" in held[-1]["payload"]["reason"]
    assert attention_of(daemon)["state"] == "blocked"
