"""The daemon's outbox task against the fake GitHub, across restarts and a kill mid-send."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.outbox.conftest import REPO, asked, github_section, start_payload
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.outbox.drain import enqueue_reaction


@pytest.fixture
def served(work: Work, gh: FakeGitHub) -> Iterator[tuple[Daemon, FakeGitHub]]:
    work.configure(github=github_section(gh, timeoutSeconds=10))
    daemon = Daemon(work)
    daemon.start(FAKE_GH_TOKEN=gh.token)
    try:
        yield daemon, gh
    finally:
        daemon.stop()


def rows(work: Work, what: str | None = None) -> list[dict[str, Any]]:
    result = work.cli("outbox", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    found: list[dict[str, Any]] = json.loads(result.stdout)
    return [r for r in found if what is None or r["what"] == what]


def announcements(gh: FakeGitHub, number: int) -> list[str]:
    return [c["body"] for c in gh.comments(REPO, number) if "started an agent" in c["body"]]


def test_502_twice_with_the_daemon_restarted_between_tries(
    served: tuple[Daemon, FakeGitHub],
) -> None:
    daemon, gh = served
    item = asked(gh)
    path = f"/repos/{REPO}/issues/{item.number}/comments"
    gh.fail_next(10_000, status=502, path=path)
    assert daemon.post("issue_comment", start_payload(item), "d-restart").status_code == 202

    def tried() -> bool:
        found = rows(daemon.work, "announce")
        return bool(found) and found[0]["attempts"] >= 1 and found[0]["status"] == "pending"

    wait_until(tried, timeout=30, what="a failed first try")
    daemon.stop()
    assert not announcements(gh, item.number)
    gh.clear_faults()
    gh.fail_next(1, status=502, path=path)  # the first try after the restart fails too
    daemon.start(FAKE_GH_TOKEN=gh.token)
    wait_until(
        lambda: rows(daemon.work, "announce")[0]["status"] == "done", timeout=30, what="posted"
    )
    assert gh.faults_left() == 0 and gh.count(path=path, status=502) >= 2
    assert len(announcements(gh, item.number)) == 1
    assert gh.count(method="POST", path="*/comments", status=201) == 1
    assert sorted(r["content"] for r in gh.reactions(REPO, comment_id=item.comment_id)) == [
        "eyes",
        "hooray",
    ]
    status = daemon.work.env.run("status", "--format", "json")
    outbox = json.loads(status.stdout)["health"]["detail"]["outbox"]
    assert outbox["done"] == 3 and outbox["pending"] == 0 and outbox["failed"] == 0
    assert "outbox:" in daemon.work.env.run("status").stdout
    api = daemon.api("GET", "/status").json()
    assert api["health"]["detail"]["outbox"]["done"] == 3


def test_a_daemon_killed_while_posting_a_comment_posts_it_once(
    served: tuple[Daemon, FakeGitHub],
) -> None:
    daemon, gh = served
    item = asked(gh)
    # GitHub takes the announcement but answers only after 8 s; the daemon dies meanwhile.
    gh.hang_next(1, seconds=8, path=f"/repos/{REPO}/issues/{item.number}/comments")
    assert daemon.post("issue_comment", start_payload(item), "d-kill").status_code == 202
    wait_until(lambda: gh.faults_left() == 0, timeout=30, what="the announcement in flight")
    assert rows(daemon.work, "announce")[0]["status"] == "sending"
    daemon.stop(signal.SIGKILL)
    wait_until(lambda: announcements(gh, item.number), timeout=20, what="the slow post landing")
    daemon.start(FAKE_GH_TOKEN=gh.token)
    wait_until(
        lambda: rows(daemon.work, "announce")[0]["status"] == "done", timeout=30, what="recovered"
    )
    assert len(announcements(gh, item.number)) == 1
    assert gh.count(method="POST", path="*/comments") == 1
    assert "found already posted" in rows(daemon.work, "announce")[0]["result"]


QUEUES = ("inbox", "outbox", "slack", "checkpoint")
"""The daemon's tasks that once looked at the database every second (the checkpoint four times
a second) whether or not anything happened (decision 0074)."""


def test_idle_queues_wait_for_work_and_another_processs_write_is_found_at_once(
    served: tuple[Daemon, FakeGitHub],
) -> None:
    """With nothing happening, the inbox, outbox, Slack and checkpoint tasks do not run (at most
    one safety pass each in 5 s; a beat of once a second would make five). A write-back that
    another process queued, which wakes nothing in the daemon, is still posted within moments:
    the daemon sees the WAL move without a commit of its own (not by its 30 s safety pass)."""
    daemon, gh = served

    def passes() -> dict[str, float]:
        found = {}
        for task in QUEUES:
            count = daemon.metric(f'the_loop_task_passes_total{{task="{task}"}}')
            assert count is not None, f"{task} passes are not in /metrics"
            found[task] = count
        return found

    wait_until(lambda: min(passes().values()) >= 1, timeout=10, what="each task's first pass")
    before = passes()
    t0 = time.monotonic()
    wait_until(lambda: time.monotonic() - t0 >= 5.0, 10, interval=0.5, what="5 s")
    spent = {task: count - before[task] for task, count in passes().items()}
    assert max(spent.values()) <= 1, f"passes in 5 idle seconds: {spent}"

    item = asked(gh)
    other = open_ctx(daemon.work.env.config_path)  # another process's connection
    try:
        with other.db.transaction() as tx:
            enqueue_reaction(tx, item.ref, "rocket", what="test", comment_id=item.comment_id)
    finally:
        other.db.close()
    wait_until(
        lambda: [r for r in gh.reactions(REPO, comment_id=item.comment_id) if r["content"]],
        timeout=10,  # the safety pass would take up to 30 s
        what="the reaction another process queued, posted",
    )
