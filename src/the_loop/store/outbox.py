"""The outbox: write-backs to other systems (GitHub reactions and comments; later Slack posts),
stored in the transaction of the decision that caused them and drained by one task.

A row is ``pending`` until a drainer claims it (``sending``, with the claimer and a lease), then
``done`` or, for a refusal that will never succeed, ``failed``; a transient failure puts it back
to ``pending`` with a later ``next_attempt_at``. A ``sending`` row whose lease ran out, or whose
claimer is gone (``recover``), is due again; ``verify`` then tells the drainer that the last try
may have reached the other side, so it looks before posting again. Every row carries a unique
``key``: enqueueing the same write-back twice stores it once.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic.alias_generators import to_camel

from the_loop.store.conn import Connection
from the_loop.store.db import Database
from the_loop.wire import UtcDatetime, Wire


class OutboxStatus(StrEnum):
    pending = "pending"
    sending = "sending"
    done = "done"
    failed = "failed"


class OutboxKind(StrEnum):
    reaction = "reaction"
    comment = "comment"
    slack = "slack"


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class ReactionPayload(_Camel):
    """A reaction CONTENT on a comment (COMMENT_ID) or, without one, on the work item."""

    kind: Literal["reaction"] = "reaction"
    content: str
    comment_id: int | None = None


class CommentPayload(_Camel):
    """A comment BODY (already marked); TOKEN is the hidden marker that identifies the post."""

    kind: Literal["comment"] = "comment"
    body: str
    token: str


class SlackPayload(_Camel):
    """A Slack Web API call (METHOD with ARGS); THREAD names the bound thread to post into
    (its ``ts`` is looked up when sending), UPDATES the posted prompt whose message to update,
    BIND / PROMPT what to record from the answer's ``ts``; TOKEN marks the post (metadata);
    AFTER the outbox row (the previous part of a split message) to be finished first."""

    kind: Literal["slack"] = "slack"
    method: Literal["chat.postMessage", "chat.update", "chat.postEphemeral"]
    args: dict[str, Any]
    thread: str | None = None
    updates: str | None = None
    bind: str | None = None
    prompt: str | None = None
    token: str = ""
    after: int | None = None


Payload = ReactionPayload | CommentPayload | SlackPayload
OutboxPayload = Annotated[Payload, Field(discriminator="kind")]
_PAYLOAD: TypeAdapter[Payload] = TypeAdapter(OutboxPayload)


class NewWrite(BaseModel):
    """A write-back to store: where it goes (TARGET, e.g. ``github``), what it is for (WHAT,
    e.g. ``pickup``), the work item it concerns and its payload; KEY makes it unique."""

    key: str
    target: str
    what: str
    work_item: str | None
    payload: OutboxPayload


class OutboxItem(Wire):
    """One stored write-back, as the surfaces show it (camelCase, ISO times in JSON)."""

    id: int
    key: str
    target: str
    kind: OutboxKind
    what: str
    work_item: str | None = None
    payload: OutboxPayload
    status: OutboxStatus
    attempts: int
    verify: bool
    next_attempt_at: UtcDatetime
    claimed_by: str | None = None
    last_error: str | None = None
    result: str | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class Enqueued(BaseModel):
    """What ``insert`` did: the row's id, and whether it is new (False: the key was known)."""

    id: int
    created: bool


_COLUMNS = (
    "id, key, target, kind, what, work_item, payload, status, attempts, verify,"
    " next_attempt_at, claimed_by, last_error, result, created_at, updated_at"
)
_NAMES = [c.strip() for c in _COLUMNS.split(",")]
_DUE = "(status = 'pending' AND next_attempt_at <= ?) OR (status = 'sending' AND claimed_until < ?)"


def _item(row: tuple[Any, ...]) -> OutboxItem:
    values = dict(zip(_NAMES, row, strict=True))
    values["payload"] = _PAYLOAD.validate_json(values["payload"])
    values["verify"] = bool(values["verify"])
    return OutboxItem.model_validate(values)


def insert(tx: Connection, new: NewWrite, now: float | None = None) -> Enqueued:
    """Store NEW inside the caller's transaction TX, unless a row with its key exists."""
    now = time.time() if now is None else now
    payload = json.dumps(new.payload.model_dump(mode="json"), separators=(",", ":"))
    created = tx.execute(
        "INSERT INTO outbox (key, target, kind, what, work_item, payload, status, attempts,"
        " verify, next_attempt_at, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, 'pending', 0, 0, ?, ?, ?) ON CONFLICT (key) DO NOTHING"
        " RETURNING id",
        (new.key, new.target, new.payload.kind, new.what, new.work_item, payload, now, now, now),
    ).fetchone()
    if created is not None:
        return Enqueued(id=int(created[0]), created=True)
    row = tx.execute("SELECT id FROM outbox WHERE key = ?", (new.key,)).fetchone()
    return Enqueued(id=int(row[0]), created=False)


def claim_due(
    db: Database,
    owner: str,
    lease: float,
    now: float | None = None,
    limit: int = 20,
    target: str | None = None,
) -> list[OutboxItem]:
    """Claim up to LIMIT due rows for OWNER (``sending`` until NOW + LEASE), oldest first.

    Due: ``pending`` rows whose ``next_attempt_at`` passed, and ``sending`` rows whose lease ran
    out (their claimer died or hung); a post taken over that way is marked ``verify``. With
    TARGET, only rows for that target.
    """
    now = time.time() if now is None else now
    where, args = _targeted(target, now)
    with db.transaction() as tx:
        rows = tx.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE {where} ORDER BY id LIMIT ?", (*args, limit)
        ).fetchall()
        items = [_item(r) for r in rows]
        for item in items:
            if item.status is OutboxStatus.sending and item.kind is not OutboxKind.reaction:
                item.verify = True
            _take(tx, item, owner, now + lease, now)
    return items


def _targeted(target: str | None, now: float) -> tuple[str, tuple[Any, ...]]:
    if target is None:
        return f"({_DUE})", (now, now)
    return f"target = ? AND ({_DUE})", (target, now, now)


def claim(db: Database, item_id: int, owner: str, lease: float) -> OutboxItem | None:
    """Claim row ITEM_ID for OWNER when it is ``pending`` (used to send one row at once)."""
    now = time.time()
    with db.transaction() as tx:
        row = tx.execute(
            f"SELECT {_COLUMNS} FROM outbox WHERE id = ? AND status = 'pending'", (item_id,)
        ).fetchone()
        if row is None:
            return None
        item = _item(row)
        _take(tx, item, owner, now + lease, now)
    return item


def _take(tx: Connection, item: OutboxItem, owner: str, until: float, now: float) -> None:
    tx.execute(
        "UPDATE outbox SET status = 'sending', attempts = attempts + 1, verify = ?,"
        " claimed_by = ?, claimed_until = ?, updated_at = ? WHERE id = ?",
        (int(item.verify), owner, until, now, item.id),
    )
    item.status, item.attempts, item.claimed_by = OutboxStatus.sending, item.attempts + 1, owner


def mark_done(db: Database, item_id: int, result: str) -> None:
    """Record that ITEM_ID was posted (RESULT says what GitHub answered)."""
    _finish(db, item_id, None, "status = 'done', result = ?, last_error = NULL", (result,))


def mark_failed(db: Database, item_id: int, owner: str, error: str) -> bool:
    """Record a permanent refusal of OWNER's claim; True when this call made the row
    ``failed`` (so the failure is reported once)."""
    return _finish(db, item_id, owner, "status = 'failed', last_error = ?", (error[:2000],))


def mark_retry(
    db: Database, item_id: int, owner: str, error: str, next_at: float, verify: bool
) -> bool:
    """Put OWNER's claim of ITEM_ID back to ``pending`` until NEXT_AT; VERIFY when the try may
    have landed. False (nothing changed) when the claim is no longer OWNER's."""
    return _finish(
        db,
        item_id,
        owner,
        "status = 'pending', last_error = ?, next_attempt_at = ?, verify = ?",
        (error[:2000], next_at, int(verify)),
    )


def _finish(
    db: Database, item_id: int, owner: str | None, assignments: str, args: tuple[Any, ...]
) -> bool:
    """Apply ASSIGNMENTS to ITEM_ID and drop its claim; with OWNER, only while OWNER holds it."""
    guard = " AND status = 'sending' AND claimed_by = ?" if owner is not None else ""
    with db.transaction() as tx:
        cur = tx.execute(
            f"UPDATE outbox SET {assignments}, claimed_by = NULL, claimed_until = NULL,"
            f" updated_at = ? WHERE id = ?{guard}",
            (*args, time.time(), item_id, *((owner,) if owner is not None else ())),
        )
        return cur.rowcount > 0


def recover(db: Database, alive: Callable[[str], bool]) -> int:
    """Make ``sending`` rows whose claimer is not ALIVE due again (comments with ``verify``);
    returns how many."""
    with db.transaction() as tx:
        rows = tx.execute(
            "SELECT id, kind, claimed_by FROM outbox WHERE status = 'sending'"
        ).fetchall()
        gone = [(int(r[0]), str(r[1])) for r in rows if not alive(str(r[2] or ""))]
        now = time.time()
        for item_id, kind in gone:
            tx.execute(
                "UPDATE outbox SET status = 'pending', next_attempt_at = ?, claimed_by = NULL,"
                " claimed_until = NULL, verify = CASE WHEN ? = 1 THEN 1 ELSE verify END,"
                " updated_at = ? WHERE id = ?",
                (now, int(kind != OutboxKind.reaction), now, item_id),
            )
        return len(gone)


def replay(db: Database, item_id: int) -> OutboxItem | None:
    """Make ITEM_ID due now with a fresh count of attempts (a ``failed`` or waiting row);
    None when it does not exist. A ``done`` or ``sending`` row is returned unchanged."""
    now = time.time()
    with db.transaction() as tx:
        row = tx.execute(f"SELECT {_COLUMNS} FROM outbox WHERE id = ?", (item_id,)).fetchone()
        if row is None:
            return None
        item = _item(row)
        if item.status in (OutboxStatus.done, OutboxStatus.sending):
            return item
        tx.execute(
            "UPDATE outbox SET status = 'pending', attempts = 0, next_attempt_at = ?,"
            " updated_at = ? WHERE id = ?",
            (now, now, item_id),
        )
    row = db.connect().execute(f"SELECT {_COLUMNS} FROM outbox WHERE id = ?", (item_id,))
    return _item(row.fetchone())


def get(db: Database, item_id: int) -> OutboxItem | None:
    row = db.connect().execute(f"SELECT {_COLUMNS} FROM outbox WHERE id = ?", (item_id,))
    found = row.fetchone()
    return _item(found) if found else None


def list_items(
    db: Database, status: OutboxStatus | None = None, limit: int = 100
) -> list[OutboxItem]:
    """Rows, newest first, optionally of one STATUS."""
    sql = f"SELECT {_COLUMNS} FROM outbox"
    args: list[Any] = []
    if status is not None:
        sql += " WHERE status = ?"
        args.append(status.value)
    sql += " ORDER BY id DESC LIMIT ?"
    args.append(limit)
    return [_item(r) for r in db.connect().execute(sql, args)]


def counts(db: Database) -> dict[str, int]:
    """Rows by status (only the statuses present)."""
    rows = db.connect().execute("SELECT status, COUNT(*) FROM outbox GROUP BY status")
    return {str(r[0]): int(r[1]) for r in rows}


def next_due(db: Database, target: str | None = None) -> float | None:
    """When the next row (of TARGET, when given) becomes due (a pending row's attempt time or
    a claim's lease end)."""
    only = "" if target is None else " AND target = ?"
    row = (
        db.connect()
        .execute(
            "SELECT MIN(CASE WHEN status = 'pending' THEN next_attempt_at ELSE claimed_until END)"
            f" FROM outbox WHERE status IN ('pending', 'sending'){only}",
            () if target is None else (target,),
        )
        .fetchone()
    )
    return float(row[0]) if row and row[0] is not None else None


def created_since(db: Database, since: float) -> bool:
    """True when some row was enqueued at or after SINCE."""
    row = db.connect().execute("SELECT 1 FROM outbox WHERE created_at >= ? LIMIT 1", (since,))
    return row.fetchone() is not None
