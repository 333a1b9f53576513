"""GitHub failing (5xx, timeouts, connection refused, rate limits): the daemon keeps serving,
backs off, and closes nothing (SPEC §12)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.intake.github_poller import MAX_BACKOFF_SECONDS, next_wait

pytestmark = pytest.mark.reliability
REPO = "octo/repo"
REF = "github:127.0.0.1/octo/repo#1"


@pytest.fixture
def polled(work: Work) -> Iterator[tuple[Daemon, FakeGitHub]]:
    with FakeGitHub() as gh:
        gh.create_repo(REPO)
        work.configure(
            github={
                "enabled": True,
                "apiUrl": gh.api_url,
                "tokenEnv": "FAKE_GH_TOKEN",
                "repos": [REPO],
                "timeoutSeconds": 0.5,
                "retries": 1,
                "poller": {"enabled": True, "intervalSeconds": 1},
            }
        )
        daemon = Daemon(work)
        daemon.start(FAKE_GH_TOKEN=gh.token)
        try:
            yield daemon, gh
        finally:
            daemon.stop()


def _cycles(daemon: Daemon) -> list[dict[str, object]]:
    return daemon.api("GET", "/events", params={"type": "poll.*", "limit": 1000}).json()


def test_outages_close_nothing_and_the_daemon_keeps_serving(
    polled: tuple[Daemon, FakeGitHub],
) -> None:
    daemon, gh = polled
    gh.add_issue(REPO, "Flaky", "body", labels=["the-loop"])
    gh.add_comment(REPO, 1, "the-loop start")
    wait_until(lambda: daemon.api("GET", "/sessions").json(), timeout=20, what="a session")
    gh.close_issue(REPO, 1)
    gh.fail_next(10_000, status=502)

    def errors() -> int:
        return sum(e["type"] == "poll.error" for e in _cycles(daemon))

    wait_until(lambda: errors() >= 2, timeout=30, what="two failed cycles")
    assert daemon.api("GET", "/health").status_code == 200
    status = daemon.work.env.run("status", "--format", "json")
    assert status.exit_code == 0, status.stdout
    last = json.loads(status.stdout)["health"]["detail"]["poller"]
    assert last["ok"] is False and "502" in (last["error"] or "")
    assert "poller:" in daemon.work.env.run("status").stdout
    assert daemon.api("GET", "/sessions").json()[0]["status"] == "active"
    gh.stop()  # connection refused from now on
    before = errors()
    wait_until(lambda: errors() > before, timeout=30, what="a refused cycle")
    assert daemon.api("GET", "/health").status_code == 200
    assert daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["status"] == "active"
    assert not [e for e in _cycles(daemon) if e["type"] == "poll.closure_detected"]


def test_rate_limit_stops_requests_until_reset(polled: tuple[Daemon, FakeGitHub]) -> None:
    daemon, gh = polled
    gh.add_issue(REPO, "Flaky", "body", labels=["the-loop"])
    gh.add_comment(REPO, 1, "the-loop start")
    wait_until(lambda: daemon.api("GET", "/sessions").json(), timeout=20)
    gh.exhaust_rate_limit(reset_in=3600)
    gh.close_issue(REPO, 1)
    wait_until(lambda: any(e["type"] == "poll.rate_limited" for e in _cycles(daemon)), timeout=30)
    gh.reset_log()
    cycles = len([e for e in _cycles(daemon) if e["type"] == "poll.cycle"])
    wait_until(
        lambda: len([e for e in _cycles(daemon) if e["type"] == "poll.cycle"]) > cycles,
        timeout=30,
        what="another cycle while limited",
    )
    assert gh.requests() == [], "a request was sent before the rate-limit reset"
    assert daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["status"] == "active"


def test_backoff_grows_with_consecutive_failures() -> None:
    waits = [next_wait(60, n) for n in range(8)]
    assert waits[0] == 60 and waits[1] == 120 and waits[2] == 240
    assert waits == sorted(waits) and waits[-1] == MAX_BACKOFF_SECONDS
    assert next_wait(600, 3) == 600
