"""Concurrent duplicates over HTTP: 100 copies of one delivery → one prompt; 100 triggers on one
new item → one session (SPEC §12)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.conftest import BACKENDS
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.intake.dispatch import dispatch

pytestmark = pytest.mark.reliability


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


def _drained(daemon: Daemon, total: int) -> bool:
    counts = daemon.api("GET", "/status").json()["inbox"]
    return counts.get("succeeded", 0) + counts.get("dead", 0) >= total and not (
        counts.get("pending") or counts.get("processing")
    )


def test_100_copies_of_one_delivery_make_one_prompt(daemon: Daemon) -> None:
    start = daemon.post("issue_comment", P.issue_comment_event("the-loop start"), "c-start")
    assert start.status_code == 202
    wait_until(lambda: _drained(daemon, 1), timeout=20)
    sid = daemon.api("GET", "/sessions").json()[0]["id"]
    payload = P.issue_comment_event("exactly once please tok-once")
    with ThreadPoolExecutor(max_workers=32) as pool:
        codes = list(
            pool.map(
                lambda _: daemon.post("issue_comment", payload, "c-same").status_code, range(100)
            )
        )
    assert set(codes) == {202}
    wait_until(lambda: _drained(daemon, 2), timeout=20)
    texts = daemon.work.wait_prompts(sid, 2)
    assert sum("tok-once" in t for t in texts) == 1
    assert len(daemon.work.events("webhook.duplicate")) >= 99


def test_100_concurrent_triggers_on_one_new_item_make_one_session(daemon: Daemon) -> None:
    def trigger(n: int) -> int:
        body = P.issue_comment_event(f"the-loop start tok-{n}-end", number=42)
        return daemon.post("issue_comment", body, f"t-{n}").status_code

    with ThreadPoolExecutor(max_workers=32) as pool:
        assert set(pool.map(trigger, range(100))) == {202}
    wait_until(lambda: _drained(daemon, 100), timeout=60)
    sessions = daemon.api("GET", "/sessions").json()
    assert [s["workItem"] for s in sessions] == ["github:octo/repo#42"]
    texts = daemon.work.wait_prompts(sessions[0]["id"], 100, timeout=30)
    tokens = [t for text in texts for t in __import__("re").findall(r"tok-(\d+)-end", text)]
    assert sorted(tokens, key=int) == [str(n) for n in range(100)]
    assert (
        json.loads(daemon.work.cli("inbox", "list", "--status", "dead", "--format", "json").stdout)
        == []
    )


def test_100_threads_triggering_one_item_at_once_make_one_session(work: Work) -> None:
    """Bypasses the worker's per-item lanes: the item lock and the database decide alone."""
    ctx = open_ctx(work.env.config_path)
    barrier = threading.Barrier(100)

    def trigger(n: int) -> str:
        body = json.dumps(P.issue_comment_event(f"the-loop start tok-{n}-end", number=77))
        barrier.wait(timeout=30)
        return dispatch(ctx, "issue_comment", body.encode(), f"b-{n}").status

    with ThreadPoolExecutor(max_workers=100) as pool:
        statuses = list(pool.map(trigger, range(100)))
    assert statuses.count("succeeded") == 100, statuses
    sessions = json.loads(work.cli("sessions", "list", "--format", "json").stdout)
    assert len(sessions) == 1
    texts = work.wait_prompts(sessions[0]["id"], 100, timeout=30)
    assert len(texts) == 100
