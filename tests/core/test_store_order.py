"""The store states its order: rows written in one instant come back in the order they were
written, on SQLite and on PostgreSQL, whatever happened to them since (an ``UPDATE`` moves a
row on PostgreSQL: a new row version, elsewhere in the table)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from the_loop.store import inbox, open_database, sessions
from the_loop.store.base import Database
from the_loop.store.sessions import SessionRecord, SessionStatus


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


def _physical_order(db: Database, table: str, key: str) -> list[str]:
    """KEY of TABLE's rows in the order they lie in the table (PostgreSQL's ``ctid``)."""
    rows = db.connect().execute(f"SELECT {key} FROM {table} ORDER BY ctid").fetchall()
    return [str(r[0]) for r in rows]


def test_comments_accepted_in_one_group_commit_are_claimed_in_arrival_order(
    tmp_path: Path, db_url: str | None
) -> None:
    db = open_database(tmp_path, db_url)
    jobs = [
        inbox.Acceptance(f"c{i}", "issue_comment", b"{}", "webhook", lane="octo/repo#7")
        for i in (1, 2, 3)
    ]
    with db.transaction() as tx:  # one group commit: one instant for all three
        inbox.accept_batch(tx, jobs)
    received = db.connect().execute("SELECT DISTINCT received_at FROM inbox").fetchall()
    assert len(received) == 1
    with db.transaction() as tx:  # the first one is updated before the claim
        tx.execute("UPDATE inbox SET updated_at = updated_at + 1 WHERE delivery_id = 'c1'")
    if db.kind == "postgresql":  # it moved: its physical place is after the others now
        assert _physical_order(db, "inbox", "delivery_id") == ["c2", "c3", "c1"]
    taken = []
    while (claimed := inbox.claim_next(db)) is not None:
        taken.append(claimed.item.delivery_id)
    assert taken == ["c1", "c2", "c3"]


def _queued(sid: str, at: float) -> SessionRecord:
    return SessionRecord(
        id=sid,
        work_item=f"github:octo/repo#{sid}",
        harness="fake",
        runner="tmux",
        cwd="/tmp",
        status=SessionStatus.queued,
        created_at=at,
        last_event_at=at,
    )


def test_sessions_queued_in_one_instant_start_in_the_order_they_were_queued(
    tmp_path: Path, db_url: str | None
) -> None:
    db = open_database(tmp_path, db_url)
    now = time.time()
    with db.transaction() as tx:
        for sid in ("q1", "q2", "q3"):
            sessions.insert(tx, _queued(sid, now))
    with db.transaction() as tx:  # the first one is updated while it waits
        sessions.update(tx, "q1", title="renamed while queued")
    if db.kind == "postgresql":
        assert _physical_order(db, "sessions", "id") == ["q2", "q3", "q1"]
    started = []
    while (next_up := sessions.oldest_queued(db.connect())) is not None:
        started.append(next_up.id)
        with db.transaction() as tx:
            sessions.update(tx, next_up.id, status=SessionStatus.active)
    assert started == ["q1", "q2", "q3"]
