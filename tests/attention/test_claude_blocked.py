"""An agent that cannot work is told, not hidden: the real Claude Code with no key and no login
says "Not logged in" in its pane and its ``StopFailure`` hook reports the failed turn; the
session's attention becomes ``blocked`` with that reason, the requester gets one notice on the
ticket, `status` counts it, `doctor` says the harness has no login, and a comment sent meanwhile
waits instead of being lost in the pane. A turn that fails on an API error that may pass is
``blocked`` too, and the next comment is its retry: delivered, not held behind it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.attention.test_claude_attention import REPO, attention_of, comments, reply, wait_state
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import ApiError, RecordedRequest, ToolUse
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.reports import RESEND_NOTE

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
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
    assert stuck["signal"] == "claude-hook:StopFailure", stuck  # the turn failed: no login
    assert stuck["prompt"]["text"].startswith("authentication_failed: Not logged in"), stuck
    notice = wait_until(lambda: comments(gh, "cannot work"), 20, what="the notice")
    assert len(notice) == 1 and "@alice" in notice[0] and "Not logged in" in notice[0]
    assert "The messages it could not take, and any new ones, are delivered" in notice[0]
    resent = daemon.api("GET", "/events", params={"type": "session.resent"}).json()
    assert [e["payload"]["count"] for e in resent] == [1], resent  # the request waits too

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


def failing_once(request: RecordedRequest) -> str | ToolUse | ApiError:
    """The first conversation turn fails as an invalid request (400: not retried), the rest
    are answered."""
    first = request.is_conversation and request.prompt and "FAIL-ONCE" in request.prompt
    if first and "TRY-AGAIN" not in request.prompt:
        return ApiError(400, "invalid_request_error", "FAKE-BAD-REQUEST the prompt was refused")
    return reply(request)


def test_a_turn_that_fails_on_the_api_is_blocked_and_the_next_comment_retries(
    work: Work, loop_env: Env
) -> None:
    attention = {"notifyAfterSeconds": 1, "pollSeconds": 0.1}
    with claude_item(work, loop_env, failing_once, ["alice"], first=None, attention=attention) as (
        daemon,
        gh,
        api,
    ):
        gh.add_comment(REPO, 1, "the-loop do FAIL-ONCE say hello", author="alice")
        stuck = wait_state(daemon, "blocked", 90)
        assert stuck["signal"] == "claude-hook:StopFailure", stuck
        assert "API Error: 400 FAKE-BAD-REQUEST" in stuck["prompt"]["text"], stuck
        assert stuck["rule"].startswith("the turn failed on an API error"), stuck
        notice = wait_until(lambda: comments(gh, "cannot work"), 20, what="the notice")
        assert len(notice) == 1 and "FAKE-BAD-REQUEST" in notice[0]
        assert "the next message is its retry" in notice[0], notice[0]

        gh.add_comment(REPO, 1, "TRY-AGAIN please", author="alice")
        wait_until(
            lambda: any("TRY-AGAIN" in (p or "") for p in api.user_prompts()),
            60,
            what="the retry at the API",
        )
        done = wait_state(daemon, "waiting", 60)
        assert done["signal"] == "claude-hook:Stop", done
        assert done["lastMessage"].startswith("FAKE-REPLY-"), done
        held = daemon.api("GET", "/events", params={"type": "session.held"}).json()
        assert held == [], held
        resent = daemon.api("GET", "/events", params={"type": "session.resent"}).json()
        assert resent == [], resent  # a failure that may pass: the comment was the retry
        texts = [t for r in api.conversation_requests() for t in r.user_texts()]
        assert not [t for t in texts if RESEND_NOTE.strip() in t], texts
