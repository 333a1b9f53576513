"""The durable inbox: duplicates, retries of failures, recovery after a crash, dead letters."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from the_loop import events as ev
from the_loop.store import inbox, open_database
from the_loop.store.inbox import InboxStatus


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


def test_accept_dedupes_and_a_failed_delivery_may_be_redelivered(
    tmp_path: Path, db_url: str | None
) -> None:
    db = open_database(tmp_path, db_url)
    first = inbox.accept(db, "d1", "issue_comment", b"{}", "webhook")
    assert not first.duplicate
    again = inbox.accept(db, "d1", "issue_comment", b"{}", "webhook")
    assert again.duplicate and again.status is InboxStatus.pending
    claimed = inbox.claim_next(db)
    assert claimed is not None and claimed[0].delivery_id == "d1"
    assert inbox.fail(db, claimed[0], "boom", transient=False) is InboxStatus.dead
    retried = inbox.accept(db, "d1", "issue_comment", b'{"a":1}', "webhook")
    assert not retried.duplicate
    item, payload = (inbox.claim_next(db) or (None, b""))[:2]
    assert item is not None and payload == b'{"a":1}'
    inbox.succeed(db, "d1", "delivered")
    assert inbox.accept(db, "d1", "issue_comment", b"{}", "webhook").duplicate


def test_transient_failures_back_off_then_dead_letter(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    inbox.accept(db, "d2", "issues", b"{}", "webhook")
    now = 1e12
    statuses = []
    for _ in range(inbox.MAX_ATTEMPTS):
        claimed = inbox.claim_next(db, now=now)
        assert claimed is not None
        assert inbox.claim_next(db, now=now) is None
        statuses.append(inbox.fail(db, claimed[0], "tmux did not answer", transient=True))
        now += 10_000
    assert statuses[:-1] == [InboxStatus.failed] * (inbox.MAX_ATTEMPTS - 1)
    assert statuses[-1] is InboxStatus.dead
    assert inbox.replay(db, "d2") is not None
    assert inbox.claim_next(db, now=now) is not None
    assert inbox.replay(db, "unknown") is None


def test_recover_makes_interrupted_items_ready(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    inbox.accept(db, "d3", "issues", b"{}", "webhook")
    assert inbox.claim_next(db) is not None
    assert inbox.claim_next(db) is None
    assert inbox.recover(db) == 1
    assert inbox.claim_next(db) is not None


def test_concurrent_claims_take_each_item_once(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    for i in range(200):
        inbox.accept(db, f"c{i}", "issues", b"{}", "webhook")
    taken: list[str] = []
    lock = threading.Lock()

    def worker() -> None:
        while (claimed := inbox.claim_next(db)) is not None:
            with lock:
                taken.append(claimed[0].delivery_id)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(taken) == sorted(f"c{i}" for i in range(200))


def test_a_batch_of_acceptances_is_what_they_would_be_one_by_one(
    tmp_path: Path, db_url: str | None
) -> None:
    """The group-commit writer's batch: new, repeated within the batch, already pending, and
    failed (made ready again with its new payload), each with the event its outcome records."""
    db = open_database(tmp_path, db_url)
    inbox.accept(db, "old", "issues", b"{}", "webhook")
    inbox.accept(db, "gone", "issues", b"{}", "webhook")
    claimed = inbox.claim_next(db)
    assert claimed is not None and claimed[0].delivery_id == "old"
    assert inbox.fail(db, claimed[0], "boom", transient=False) is InboxStatus.dead

    def job(delivery_id: str, payload: bytes) -> inbox.Acceptance:
        return inbox.Acceptance(
            delivery_id,
            "issues",
            payload,
            "webhook",
            record=lambda a: (
                ev.build(
                    "webhook.received", source="test", delivery_id=a.delivery_id, event="issues"
                )
                if not a.duplicate
                else None
            ),
        )

    ids = ["n1", "n2", "n1", "gone", "old", *(f"bulk-{i}" for i in range(250))]
    with db.transaction() as tx:
        results = inbox.accept_batch(tx, [job(i, f'{{"id":"{i}"}}'.encode()) for i in ids])
    assert [(r.delivery_id, r.duplicate, r.status) for r in results[:5]] == [
        ("n1", False, InboxStatus.pending),
        ("n2", False, InboxStatus.pending),
        ("n1", True, InboxStatus.pending),
        ("gone", True, InboxStatus.pending),
        ("old", False, InboxStatus.pending),
    ]
    assert len(results) == len(ids)
    received = ev.query(db, ev.EventFilter(("webhook.received",), limit=1000))
    assert sorted(e.delivery_id or "" for e in received) == sorted({*ids} - {"gone"})
    found = {}
    while (claim := inbox.claim_next(db)) is not None:
        found[claim[0].delivery_id] = claim[1]
    assert found["old"] == b'{"id":"old"}' and found["n1"] == b'{"id":"n1"}'
    assert len(found) == len(set(ids))


def test_the_oldest_ready_item_is_claimed_first_whatever_its_status(
    tmp_path: Path, db_url: str | None
) -> None:
    """A failed item due again goes before a pending one received after it; one not yet due
    waits; pending ones go in the order they came (one batch shares its received time)."""
    db = open_database(tmp_path, db_url)
    inbox.accept(db, "first", "issues", b"{}", "webhook")
    claimed = inbox.claim_next(db)
    assert claimed is not None and claimed[0].delivery_id == "first"
    assert inbox.fail(db, claimed[0], "tmux did not answer", transient=True) is InboxStatus.failed
    with db.transaction() as tx:
        inbox.accept_batch(
            tx, [inbox.Acceptance(f"b{i}", "issues", b"{}", "webhook") for i in range(3)]
        )
    waiting = inbox.claim_next(db)  # "first" is not due yet: the batch's first goes
    assert waiting is not None and waiting[0].delivery_id == "b0"
    order = []
    while (claim := inbox.claim_next(db, now=1e12)) is not None:  # everything due
        order.append(claim[0].delivery_id)
    assert order == ["first", "b1", "b2"]
