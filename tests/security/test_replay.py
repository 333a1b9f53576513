"""Replays (SPEC §11): a comment or review is processed once, by its GitHub id, whatever the
delivery id it comes under — a captured signed delivery replayed with new ids, or the poller
and a webhook seeing the same comment."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

pytestmark = pytest.mark.security

REF = "github:octo/repo#15"
PR_REF = "github:octo/repo#20"


def _succeeded(daemon: Daemon) -> list[object]:
    out = daemon.work.cli("inbox", "list", "--status", "succeeded", "--format", "json").stdout
    return json.loads(out)  # type: ignore[no-any-return]


def _already_processed(work: Work) -> list[dict[str, object]]:
    return [
        e for e in work.events("route.ignored") if e["payload"]["reason"] == "already-processed"
    ]


def test_a_signed_delivery_replayed_with_new_ids_is_delivered_once(daemon: Daemon) -> None:
    body = json.dumps(P.issue_comment_event("the-loop do fix the scheduler")).encode()
    for delivery in ("real-1", "replay-2", "replay-3"):
        r = daemon.post("issue_comment", None, delivery, body=body)
        assert r.status_code == 202 and r.json()["accepted"] is True
    wait_until(lambda: len(_succeeded(daemon)) == 3, timeout=30, what="three processed")
    sessions = json.loads(daemon.work.cli("sessions", "list", "--format", "json").stdout)
    assert len(sessions) == 1
    sid = str(sessions[0]["id"])
    assert len(daemon.work.wait_prompts(sid, 1)) == 1
    assert len(_already_processed(daemon.work)) == 2
    daemon.post("issue_comment", P.issue_comment_event("a genuinely new comment"), "real-4")
    assert "genuinely new" in daemon.work.wait_prompts(sid, 2)[1]


def test_replayed_reviews_and_review_comments_are_delivered_once(work: Work) -> None:
    start = P.issue_comment_event("the-loop start", number=20, on_pr=True)
    assert work.dispatch("issue_comment", start, "start").exit_code == 0
    sid = str(work.session_json(PR_REF)["id"])
    review = P.review_event("Please add a test.")
    note = P.review_comment_event("This line leaks.")
    for n in range(3):
        assert work.dispatch("pull_request_review", review, f"review-{n}").exit_code == 0
        assert work.dispatch("pull_request_review_comment", note, f"note-{n}").exit_code == 0
    texts = work.wait_prompts(sid, 3)
    assert len(texts) == 3, texts
    assert len(_already_processed(work)) == 4


def test_a_replayed_stop_does_not_close_a_later_session(work: Work) -> None:
    assert (
        work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "a").exit_code == 0
    )
    stop = P.issue_comment_event("the-loop stop")
    assert work.dispatch("issue_comment", stop, "stop-1").exit_code == 0
    assert work.session_json(REF)["status"] == "closed"
    assert (
        work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "b").exit_code == 0
    )
    fresh = work.session_json(REF)
    assert fresh["status"] == "active"
    assert work.dispatch("issue_comment", stop, "stop-replayed").exit_code == 0
    after = work.session_json(REF)
    assert after["id"] == fresh["id"] and after["status"] == "active"


# --- the poller and a webhook seeing one comment -----------------------------------------------

REPO = "octo/repo"
FAKE_REF = "github:127.0.0.1/octo/repo#1"


@pytest.fixture
def gh(work: Work, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.create_repo(REPO)
        monkeypatch.setenv("FAKE_GH_TOKEN", fake.token)
        work.configure(
            github={
                "enabled": True,
                "apiUrl": fake.api_url,
                "tokenEnv": "FAKE_GH_TOKEN",
                "repos": [REPO],
                "timeoutSeconds": 2,
                "retries": 1,
            }
        )
        yield fake


def _webhook_for(comment_id: int, body: str) -> dict[str, object]:
    """The ``issue_comment`` delivery GitHub sends for comment COMMENT_ID on issue #1."""
    return P.issue_comment_event(body, number=1, comment_id=comment_id)


def test_a_comment_seen_by_the_poller_and_a_webhook_is_delivered_once(
    work: Work, gh: FakeGitHub
) -> None:
    gh.add_issue(REPO, "Flaky", "The test is flaky", labels=["the-loop"])
    ask = gh.add_comment(REPO, 1, "the-loop start please")
    # the webhook first, then the poller's first sight finds the same start comment
    hook = _webhook_for(ask, "the-loop start please")
    assert work.dispatch("issue_comment", hook, "hook-1").exit_code == 0
    sid = str(work.session_json(FAKE_REF)["id"])
    assert len(work.wait_prompts(sid, 1)) == 1
    assert work.cli("poll", "--once").exit_code == 0
    # the poller first, then the (late) webhook for the same comment
    later = gh.add_comment(REPO, 1, "a new comment for the agent")
    assert work.cli("poll", "--once").exit_code == 0
    texts = work.wait_prompts(sid, 2)
    late = _webhook_for(later, "a new comment for the agent")
    assert work.dispatch("issue_comment", late, "hook-2").exit_code == 0
    assert work.cli("poll", "--once").exit_code == 0
    assert work.prompts(sid) == texts and len(texts) == 2
    assert len(json.loads(work.cli("sessions", "list", "--format", "json").stdout)) == 1
    assert len(_already_processed(work)) == 2
