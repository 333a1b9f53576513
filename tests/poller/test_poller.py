"""The poller against the fake GitHub, with real tmux and the fake agent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

REPO = "octo/repo"
# The fake serves on 127.0.0.1, so refs carry that host as an enterprise host would (SPEC §1).
REF = "github:127.0.0.1/octo/repo#1"


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
                "timeoutSeconds": 0.5,
                "retries": 1,
            }
        )
        yield fake


def poll(work: Work, expect: int = 0) -> str:
    result = work.cli("poll", "--once")
    assert result.exit_code == expect, result.stdout + result.stderr
    return result.stdout


def started(work: Work, gh: FakeGitHub) -> str:
    number = gh.add_issue(REPO, "Flaky", "The test is flaky", labels=["the-loop"])
    assert number == 1
    gh.add_comment(REPO, 1, "old chatter before the-loop looked")
    gh.add_comment(REPO, 1, "the-loop start please")
    poll(work)
    sid = str(work.session_json(REF)["id"])
    texts = work.wait_prompts(sid, 1)
    assert "old chatter" not in texts[0]
    return sid


def test_start_comment_and_idle_cycle(work: Work, gh: FakeGitHub) -> None:
    sid = started(work, gh)
    assert "the-loop start please" in work.prompts(sid)[0]
    gh.add_comment(REPO, 1, "a new comment for the agent")
    poll(work)
    texts = work.wait_prompts(sid, 2)
    assert "a new comment for the agent" in texts[1]
    poll(work)  # settles what the-loop's own reactions and comments changed
    gh.reset_log()
    poll(work)
    requests = gh.requests()
    assert requests, "an idle cycle still asks"
    assert all(r.status == 304 for r in requests), [(r.path, r.status) for r in requests]
    assert gh.cost() == 0
    assert len(requests) <= 2
    assert len(work.prompts(sid)) == 2


def test_writebacks_carry_the_marker_and_never_come_back(work: Work, gh: FakeGitHub) -> None:
    sid = started(work, gh)
    comments = gh.comments(REPO, 1)
    announcements = [c for c in comments if "the-loop started an agent" in c["body"]]
    assert len(announcements) == 1 and "<!-- the-loop -->" in announcements[0]["body"]
    reactions = [r["content"] for r in gh.reactions(REPO, comment_id=comments[1]["id"])]
    assert "eyes" in reactions and "hooray" in reactions
    poll(work)
    poll(work)
    assert len(work.prompts(sid)) == 1


def test_closed_issue_closes_the_session(work: Work, gh: FakeGitHub) -> None:
    started(work, gh)
    gh.close_issue(REPO, 1)
    poll(work)
    shown = work.session_json(REF)
    assert shown["status"] == "closed" and shown["closeReason"] == "issue-closed"
    assert work.events("poll.closure_detected")
    assert work.events("session.harness_terminated")
    gh.reopen_issue(REPO, 1)
    gh.add_comment(REPO, 1, "the-loop start again")
    poll(work)
    fresh = work.session_json(REF)
    assert fresh["status"] == "active" and fresh["id"] != shown["id"]


def test_label_removed_leaves_the_session_alone(work: Work, gh: FakeGitHub) -> None:
    started(work, gh)
    gh.remove_label(REPO, 1, "the-loop")
    poll(work)
    assert work.session_json(REF)["status"] == "active"
    assert not work.events("poll.closure_detected")


def test_errors_close_nothing_and_the_next_cycle_is_fine(work: Work, gh: FakeGitHub) -> None:
    started(work, gh)
    gh.close_issue(REPO, 1)
    gh.fail_next(2, status=500)  # the listing and its one retry
    out = poll(work, expect=1)
    assert "500" in out or "error" in out.lower()
    assert work.session_json(REF)["status"] == "active"
    assert work.events("poll.error")
    gh.hang_next(2, seconds=2.0)  # longer than timeoutSeconds, twice
    poll(work, expect=1)
    assert work.session_json(REF)["status"] == "active"
    poll(work)
    assert work.session_json(REF)["status"] == "closed"


def test_rate_limit_waits_for_the_reset(work: Work, gh: FakeGitHub) -> None:
    import asyncio

    from the_loop.context import open_ctx
    from the_loop.intake.github_poller import Poller

    started(work, gh)
    gh.add_comment(REPO, 1, "while limited")
    gh.exhaust_rate_limit(reset_in=3600)
    ctx = open_ctx(work.env.config_path)

    async def two_cycles() -> int:
        poller = Poller(ctx)
        try:
            await poller.cycle()
            gh.reset_log()
            await poller.cycle()
            return len(gh.requests())
        finally:
            await poller.client.aclose()

    assert asyncio.run(two_cycles()) == 0
    limited = work.events("poll.rate_limited")
    assert limited and limited[-1]["payload"]["resetAt"]


@pytest.mark.reliability
def test_a_failed_closure_check_is_retried_on_a_304_cycle(work: Work, gh: FakeGitHub) -> None:
    started(work, gh)
    poll(work)  # settles what the-loop's own write-backs changed
    gh.close_issue(REPO, 1)
    gh.fail_next(2, status=502, path="/repos/octo/repo/issues/1")  # the check and its retry
    poll(work, expect=1)
    assert work.session_json(REF)["status"] == "active"
    assert not work.events("poll.closure_detected")
    gh.reset_log()
    poll(work)  # a new process: the listing is unchanged (304), the check is still owed
    listings = gh.requests(method="GET", path="/repos/octo/repo/issues")
    assert listings and all(r.status == 304 for r in listings)
    shown = work.session_json(REF)
    assert shown["status"] == "closed" and shown["closeReason"] == "issue-closed"
    assert len(work.events("poll.closure_detected")) == 1
    gh.reset_log()
    poll(work)  # answered: owed no more
    assert not gh.requests(path="/repos/octo/repo/issues/1")


def test_an_answered_closure_check_is_not_repeated(work: Work, gh: FakeGitHub) -> None:
    started(work, gh)
    gh.remove_label(REPO, 1, "the-loop")
    poll(work)
    assert gh.requests(method="GET", path="/repos/octo/repo/issues/1")
    gh.reset_log()
    poll(work)
    assert not gh.requests(path="/repos/octo/repo/issues/1")
    assert work.session_json(REF)["status"] == "active"


@pytest.mark.reliability
def test_a_rate_limit_seen_by_one_process_is_honoured_by_the_next(
    work: Work, gh: FakeGitHub
) -> None:
    sid = started(work, gh)
    poll(work)  # settles what the-loop's own write-backs changed
    gh.add_comment(REPO, 1, "while limited")
    gh.exhaust_rate_limit(reset_in=3600)
    first = work.env.run("poll", "--once")
    assert first.exit_code == 1, first.stdout + first.stderr
    assert gh.requests(status=403), "the first process met the limit"
    gh.reset_log()
    second = work.env.run("poll", "--once")  # another process, before the reset
    assert second.exit_code == 1 and "rate limited" in second.stdout, second.stdout
    assert gh.requests() == []
    limited = work.events("poll.rate_limited")
    assert (
        len(limited) == 2 and limited[0]["payload"]["resetAt"] == limited[1]["payload"]["resetAt"]
    )
    assert len(work.prompts(sid)) == 1


@pytest.mark.reliability
def test_polling_resumes_after_a_persisted_reset(work: Work, gh: FakeGitHub) -> None:
    sid = started(work, gh)
    gh.add_comment(REPO, 1, "after the reset")
    gh.exhaust_rate_limit(reset_in=2)
    poll(work, expect=1)
    wait_until(lambda: work.cli("poll", "--once").exit_code == 0, timeout=20, what="a reset")
    assert "after the reset" in work.wait_prompts(sid, 2)[1]
