"""The durable inbox: every accepted delivery, keyed by its delivery id, until processed.

A delivery is committed here before it is acknowledged. A worker claims ready items, processes
them and records the outcome; on restart, items left ``processing`` are made ready again.
Failures retry with backoff and end ``dead`` after ``MAX_ATTEMPTS``.

Each row keeps the raw body as received (for replay and forensics; empty for a poller's
deliveries, which have none) and, since migration ``0011_inbox_work``, what intake made of it:
``work``, the delivery decoded once into a typed form (opaque text to this module), and
``lane``, the key of the worker lane it runs in. Rows accepted before that migration carry
neither (``None``); their consumer derives both from the body.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, NamedTuple

from pydantic import BaseModel

from the_loop.backoff import Backoff
from the_loop.store import events
from the_loop.store.conn import Connection
from the_loop.store.db import Database
from the_loop.store.events import NewEvent
from the_loop.store.rows import inbox_counts
from the_loop.wire import Timestamp, Wire

MAX_ATTEMPTS = 5
RETRY = Backoff(base=1.0, factor=5.0, cap=120.0, jitter=0.0)
"""When a delivery that failed transiently is processed again: 1 s, 5 s, 25 s, then 2 minutes."""


class InboxStatus(StrEnum):
    pending = "pending"
    processing = "processing"
    succeeded = "succeeded"
    failed = "failed"
    dead = "dead"


class InboxItem(Wire):
    """One delivery in the inbox, as the surfaces show it."""

    delivery_id: str
    event: str
    source: str
    status: InboxStatus
    attempts: int
    received_at: Timestamp
    updated_at: Timestamp
    next_attempt_at: Timestamp
    last_error: str | None = None
    outcome: str | None = None


class Accepted(BaseModel):
    """What ``accept`` did: a new item, a retry of a failed one, or a duplicate."""

    delivery_id: str
    duplicate: bool
    status: InboxStatus


class Claimed(NamedTuple):
    """A claimed item: the item, its raw body, and what intake stored (``None`` for rows
    accepted before ``0011_inbox_work``)."""

    item: InboxItem
    payload: bytes
    work: str | None = None
    lane: str | None = None


class Handled(NamedTuple):
    """What processing a claimed item did: a one-line summary, the engine's reasons (none
    when it was not asked), and the events its decision-only actions left to be committed
    with the outcome (``succeed``)."""

    summary: str
    reasons: tuple[str, ...] = ()
    records: tuple[NewEvent, ...] = ()


_COLUMNS = (
    "delivery_id, event, source, status, attempts, received_at, updated_at, next_attempt_at,"
    " last_error, outcome"
)
_NAMES = [c.strip() for c in _COLUMNS.split(",")]


def _item(row: tuple[Any, ...]) -> InboxItem:
    return InboxItem.model_validate(dict(zip(_NAMES, row, strict=True)))


def accept(
    db: Database,
    delivery_id: str,
    event: str,
    payload: bytes,
    source: str,
    *,
    work: str | None = None,
    lane: str | None = None,
) -> Accepted:
    """Commit a delivery with what intake made of it (WORK, LANE); a known id is a duplicate
    unless its processing failed, in which case it is stored afresh and made ready."""
    return accept_in_transaction(db, Acceptance(delivery_id, event, payload, source, work, lane))


def accept_in_transaction(db: Database, job: Acceptance) -> Accepted:
    """``accept_in`` in a transaction of its own (the connection's ordinary durability)."""
    with db.transaction() as tx:
        return accept_in(tx, job)


@dataclass(frozen=True, slots=True)
class Acceptance:
    """One delivery to commit (see ``accept``); RECORD returns the event that records the
    outcome, written in the same transaction (None: no event)."""

    delivery_id: str
    event: str
    payload: bytes
    source: str
    work: str | None = None
    lane: str | None = None
    record: Callable[[Accepted], NewEvent | None] | None = None


_INSERT = (
    "INSERT INTO inbox (delivery_id, event, source, payload, work, lane, status, attempts,"
    " received_at, updated_at, next_attempt_at) VALUES "
)
_MARKS = "(?, ?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)"


def accept_in(tx: Connection, job: Acceptance) -> Accepted:
    """``accept`` within the caller's open write transaction TX (group commit: several
    acceptances share one commit, and so one sync)."""
    now = time.time()
    delivery_id = job.delivery_id
    row = tx.execute("SELECT status FROM inbox WHERE delivery_id = ?", (delivery_id,)).fetchone()
    if row is None:
        tx.execute(
            _INSERT + _MARKS,
            (delivery_id, job.event, job.source, job.payload, job.work, job.lane, now, now, now),
        )
        accepted = Accepted(delivery_id=delivery_id, duplicate=False, status=InboxStatus.pending)
    elif InboxStatus(row[0]) in (InboxStatus.failed, InboxStatus.dead):
        tx.execute(
            "UPDATE inbox SET payload = ?, work = ?, lane = ? WHERE delivery_id = ?",
            (job.payload, job.work, job.lane, delivery_id),
        )
        _make_ready(tx, delivery_id, now)
        accepted = Accepted(delivery_id=delivery_id, duplicate=False, status=InboxStatus.pending)
    else:
        accepted = Accepted(delivery_id=delivery_id, duplicate=True, status=InboxStatus(row[0]))
    if job.record is not None:
        recorded = job.record(accepted)
        if recorded is not None:
            events.insert(tx, recorded)
    return accepted


def accept_batch(tx: Connection, jobs: list[Acceptance]) -> list[Accepted]:
    """``accept_in`` for each of JOBS, in order, within TX, in a few statements for the whole
    batch (one look-up, one insert of the new rows, one of their events): the group-commit
    writer's thread then waits for the GIL a few times per commit rather than three times per
    delivery. A delivery that comes twice in JOBS is a duplicate the second time; one found
    failed or dead is made ready again, as ``accept_in`` does."""
    ids = list({job.delivery_id: None for job in jobs})
    known: dict[str, str] = {}
    for start in range(0, len(ids), _IN_CHUNK):
        part = ids[start : start + _IN_CHUNK]
        marks = ", ".join("?" * len(part))
        sql = f"SELECT delivery_id, status FROM inbox WHERE delivery_id IN ({marks})"
        known.update((str(r[0]), str(r[1])) for r in tx.execute(sql, part).fetchall())
    results: list[Accepted] = []
    rows: list[tuple[Any, ...]] = []
    recorded: list[NewEvent] = []
    now = time.time()
    for job in jobs:
        status = known.get(job.delivery_id)
        if status is None:
            new = (job.delivery_id, job.event, job.source, job.payload, job.work, job.lane)
            rows.append((*new, now, now, now))
            known[job.delivery_id] = InboxStatus.pending.value
            accepted = Accepted(
                delivery_id=job.delivery_id, duplicate=False, status=InboxStatus.pending
            )
        elif InboxStatus(status) in (InboxStatus.failed, InboxStatus.dead):
            accepted = accept_in(tx, job)  # rare: a redelivery of one that failed
            known[job.delivery_id] = accepted.status.value
            results.append(accepted)
            continue
        else:
            accepted = Accepted(
                delivery_id=job.delivery_id, duplicate=True, status=InboxStatus(status)
            )
        event = job.record(accepted) if job.record is not None else None
        if event is not None:
            recorded.append(event)
        results.append(accepted)
    for start in range(0, len(rows), _ROWS_CHUNK):
        chunk = rows[start : start + _ROWS_CHUNK]
        marks = ", ".join([_MARKS] * len(chunk))
        tx.execute(_INSERT + marks, [value for row in chunk for value in row])
    events.insert_many(tx, recorded)
    return results


_IN_CHUNK = 500
"""Delivery ids per look-up (far below SQLite's and PostgreSQL's limits on parameters)."""
_ROWS_CHUNK = 100
"""Rows per multi-row insert (9 parameters each)."""


def _make_ready(tx: Connection, delivery_id: str, now: float) -> None:
    tx.execute(
        "UPDATE inbox SET status = 'pending', attempts = 0, next_attempt_at = ?, updated_at = ?,"
        " node = NULL, claimed_by = NULL"
        " WHERE delivery_id = ?",
        (now, now, delivery_id),
    )


def claim_next(db: Database, now: float | None = None, node: str | None = None) -> Claimed | None:
    """Take the oldest ready item (pending, or failed and due) and mark it processing; with
    NODE (several nodes share the database), one meant for any node or forwarded to NODE,
    recorded as NODE's claim.

    Of deliveries received in the same instant (one group commit), the one accepted first
    (``seq``) is taken first. One look-up per status, each walking ``inbox_order`` (status,
    received_at, seq) from its oldest row (``+next_attempt_at`` keeps SQLite from
    walking an index on that column and sorting every ready row: 2 to 6 ms per claim, under the
    write lock, with a backlog of 15,000); the older of the two is taken."""
    now = time.time() if now is None else now
    mine = "" if node is None else " AND (node IS NULL OR node = ?)"
    args = (now,) if node is None else (now, node)
    return _claim(
        db,
        [
            (
                f"status = '{status}' AND +next_attempt_at <= ?{mine}"
                " ORDER BY received_at, seq LIMIT 1",
                args,
            )
            for status in (InboxStatus.pending.value, InboxStatus.failed.value)
        ],
        now,
        node,
    )


def claim(db: Database, delivery_id: str, node: str | None = None) -> Claimed | None:
    """Take one named item if it is ready (used by ``dispatch`` to process synchronously)."""
    return _claim(
        db,
        [("delivery_id = ? AND status IN ('pending', 'failed')", (delivery_id,))],
        time.time(),
        node,
    )


def _claim(
    db: Database, choices: list[tuple[str, tuple[Any, ...]]], now: float, node: str | None
) -> Claimed | None:
    """In one transaction: of the first item matching each WHERE of CHOICES, mark the one
    received first processing (on a shared database, skipping rows another node's claim
    holds)."""
    skip_locked = " FOR UPDATE SKIP LOCKED" if db.shared else ""
    with db.claim_transaction() as tx:
        found = [
            row
            for where, args in choices
            if (
                row := tx.execute(
                    f"SELECT {_COLUMNS}, payload, work, lane, seq FROM inbox"
                    f" WHERE {where}{skip_locked}",
                    args,
                ).fetchone()
            )
            is not None
        ]
        if not found:
            return None
        row = min(found, key=lambda r: (float(r[_NAMES.index("received_at")]), int(r[-1])))
        item = _item(row[:-4])
        tx.execute(
            "UPDATE inbox SET status = 'processing', attempts = attempts + 1, updated_at = ?,"
            " claimed_by = ? WHERE delivery_id = ?",
            (now, node, item.delivery_id),
        )
    item.status = InboxStatus.processing
    item.attempts += 1
    payload, work, lane = row[-4:-1]
    return Claimed(item, bytes(payload), work, lane)


def holds_claim(db: Database, delivery_id: str, node: str) -> bool:
    """Whether NODE's claim of DELIVERY_ID still stands (it is gone when NODE was declared dead
    meanwhile and the item was released for the other nodes)."""
    row = (
        db.connect()
        .execute(
            "SELECT 1 FROM inbox WHERE delivery_id = ? AND status = 'processing'"
            " AND claimed_by = ?",
            (delivery_id, node),
        )
        .fetchone()
    )
    return row is not None


def forward(
    db: Database, delivery_id: str, node: str, to: str, event: NewEvent | None = None
) -> bool:
    """Hand NODE's claim of DELIVERY_ID to node TO: ready again for TO only (its claim is not
    counted as an attempt); False when NODE no longer holds it. EVENT is written with it."""
    with db.transaction() as tx:
        cur = tx.execute(
            "UPDATE inbox SET status = 'pending', node = ?, claimed_by = NULL,"
            " attempts = attempts - 1, updated_at = ? WHERE delivery_id = ?"
            " AND status = 'processing' AND claimed_by = ?",
            (to, time.time(), delivery_id, node),
        )
        _record(tx, event)
        return cur.rowcount > 0


def _held_by(node: str | None) -> tuple[str, tuple[str, ...]]:
    """The guard of a claim's outcome: only while NODE holds it (None: whoever does)."""
    return ("", ()) if node is None else (" AND claimed_by = ?", (node,))


def _record(tx: Connection, event: NewEvent | None) -> None:
    if event is not None:
        events.insert(tx, event)


def succeed(
    db: Database,
    delivery_id: str,
    outcome: str,
    node: str | None = None,
    events: Sequence[NewEvent] = (),
) -> None:
    """Record DELIVERY_ID processed (with NODE: only while NODE's claim of it stands), and
    EVENTS (what its processing decided, then the outcome's event) in the same transaction."""
    guard, held = _held_by(node)
    with db.transaction() as tx:
        tx.execute(
            "UPDATE inbox SET status = 'succeeded', outcome = ?, last_error = NULL,"
            f" claimed_by = NULL, node = NULL, updated_at = ? WHERE delivery_id = ?{guard}",
            (outcome, time.time(), delivery_id, *held),
        )
        for event in events:
            _record(tx, event)


def failure_status(item: InboxItem, transient: bool) -> InboxStatus:
    """What a failure of ITEM makes it: ``failed`` (retried with backoff) until a permanent
    failure or ``MAX_ATTEMPTS``, then ``dead``."""
    dead = not transient or item.attempts >= MAX_ATTEMPTS
    return InboxStatus.dead if dead else InboxStatus.failed


def fail(
    db: Database,
    item: InboxItem,
    error: str,
    transient: bool,
    node: str | None = None,
    event: NewEvent | None = None,
) -> InboxStatus:
    """Record a failure (``failure_status``; with NODE: only while NODE's claim of it stands),
    and EVENT in the same transaction."""
    guard, held = _held_by(node)
    now = time.time()
    delay = RETRY.delay(item.attempts)
    status = failure_status(item, transient)
    with db.transaction() as tx:
        tx.execute(
            "UPDATE inbox SET status = ?, last_error = ?, updated_at = ?, next_attempt_at = ?,"
            f" claimed_by = NULL WHERE delivery_id = ?{guard}",
            (status.value, error[:2000], now, now + delay, item.delivery_id, *held),
        )
        _record(tx, event)
    return status


def recover(db: Database, node: str | None = None) -> int:
    """Make items interrupted mid-processing (a crash) ready again; returns how many. With
    NODE (several nodes share the database), only NODE's own claims and claims older than
    nodes: another node's claims are its own, until it is declared dead."""
    mine = "" if node is None else " AND (claimed_by IS NULL OR claimed_by = ?)"
    with db.transaction() as tx:
        cur = tx.execute(
            "UPDATE inbox SET status = 'pending', claimed_by = NULL, updated_at = ?"
            f" WHERE status = 'processing'{mine}",
            (time.time(),) if node is None else (time.time(), node),
        )
        return cur.rowcount


def replay(db: Database, delivery_id: str) -> InboxItem | None:
    """Make a failed, dead or finished item ready again; None when the id is unknown."""
    with db.transaction() as tx:
        row = tx.execute(
            f"SELECT {_COLUMNS} FROM inbox WHERE delivery_id = ?", (delivery_id,)
        ).fetchone()
        if row is None:
            return None
        _make_ready(tx, delivery_id, time.time())
    item = _item(row)
    item.status = InboxStatus.pending
    return item


def list_items(
    db: Database, status: InboxStatus | None = None, limit: int = 100
) -> list[InboxItem]:
    sql = f"SELECT {_COLUMNS} FROM inbox"
    args: list[Any] = []
    if status is not None:
        sql += " WHERE status = ?"
        args.append(status.value)
    sql += " ORDER BY received_at DESC LIMIT ?"
    args.append(limit)
    return [_item(r) for r in db.connect().execute(sql, args)]


def counts(db: Database) -> dict[str, int]:
    return inbox_counts(db.connect())


def next_due(db: Database) -> float | None:
    row = (
        db.connect()
        .execute("SELECT MIN(next_attempt_at) FROM inbox WHERE status IN ('pending', 'failed')")
        .fetchone()
    )
    return float(row[0]) if row and row[0] is not None else None
