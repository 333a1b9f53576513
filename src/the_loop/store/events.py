"""The ``events`` table: append, select by filter, newest id, prune, count by type.

The event catalogue and the rules of ``emit`` live in ``the_loop.events``; this module only
stores rows and turns them into ``Event`` models. An event that names a session moves that
session's ``last_event_at`` in the same transaction.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ConfigDict, Field

from the_loop.store.attention import TOUCH_SESSION
from the_loop.store.conn import Connection
from the_loop.store.db import Database
from the_loop.store.rows import (
    EVENT_COLUMNS,
    event_where,
    level_name,
    newest_event_rows,
)
from the_loop.store.rows import EventFilter as EventFilter  # re-exported
from the_loop.store.rows import Level as Level  # re-exported
from the_loop.wire import UtcDatetime, Wire


class Event(Wire):
    """One row of the event log as the surfaces show it (camelCase, ISO times in JSON)."""

    model_config = ConfigDict(defer_build=True)

    id: int
    ts: UtcDatetime
    type: str
    level: str
    source: str
    work_item: str | None = None
    standing: str | None = None
    session_id: str | None = None
    delivery_id: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event to append, its payload already validated and encoded as JSON."""

    ts: float
    type: str
    level: int
    source: str
    work_item: str | None
    standing: str | None
    session_id: str | None
    delivery_id: str | None
    payload_json: str


def append(db: Database, event: NewEvent) -> int:
    """Append EVENT in its own transaction; returns its id."""
    with db.transaction() as tx:
        return insert(tx, event)


_INSERT = (
    "INSERT INTO events (ts, type, level, source, work_item, standing, session_id,"
    " delivery_id, payload) VALUES "
)
_MARKS = "(?, ?, ?, ?, ?, ?, ?, ?, ?)"


def _values(event: NewEvent) -> tuple[Any, ...]:
    return (
        event.ts,
        event.type,
        event.level,
        event.source,
        event.work_item,
        event.standing,
        event.session_id,
        event.delivery_id,
        event.payload_json,
    )


def insert(tx: Connection, event: NewEvent) -> int:
    """Append EVENT within the caller's open transaction TX; returns its id."""
    found = int(tx.execute(_INSERT + _MARKS + " RETURNING id", _values(event)).fetchone()[0])
    _touch(tx, [event])
    return found


def insert_many(tx: Connection, new: list[NewEvent]) -> None:
    """Append the events NEW, in order, within TX (one statement per hundred)."""
    for start in range(0, len(new), 100):
        part = new[start : start + 100]
        values = [value for event in part for value in _values(event)]
        tx.execute(_INSERT + ", ".join([_MARKS] * len(part)), values)
    _touch(tx, new)


def _touch(tx: Connection, new: list[NewEvent]) -> None:
    """Move the ``last_event_at`` of each session NEW names to its newest event's time."""
    newest: dict[str, float] = {}
    for event in new:
        if event.session_id is not None:
            newest[event.session_id] = max(event.ts, newest.get(event.session_id, 0.0))
    for session_id, ts in newest.items():
        tx.execute(TOUCH_SESSION, (ts, session_id, ts))


def _row_to_event(row: tuple[Any, ...]) -> Event:
    return Event(
        id=row[0],
        ts=datetime.fromtimestamp(row[1], tz=UTC),
        type=row[2],
        level=level_name(row[3]),
        source=row[4],
        work_item=row[5],
        standing=row[6],
        session_id=row[7],
        delivery_id=row[8],
        payload=json.loads(row[9]),
    )


def newest(db: Database, f: EventFilter) -> list[Event]:
    """The newest ``limit`` events matching F, oldest first."""
    return [_row_to_event(r) for r in newest_event_rows(db.connect(), f)]


def after(db: Database, f: EventFilter, batch: int = 500) -> list[Event]:
    """Events after ``f.after_id`` matching F, oldest first (at most BATCH)."""
    where, args = event_where(f)
    sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY id ASC LIMIT ?"
    rows = db.connect().execute(sql, [*args, batch]).fetchall()
    return [_row_to_event(r) for r in rows]


def last_id(db: Database) -> int:
    """The id of the newest event (0 when there is none)."""
    row = db.connect().execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
    return int(row[0])


def delete_before(db: Database, cutoff: float) -> int:
    """Delete events older than CUTOFF (a Unix time); returns how many were removed."""
    with db.transaction() as tx:
        cur = tx.execute("DELETE FROM events WHERE ts < ?", (cutoff,))
        return cur.rowcount


def count_of_type(db: Database, type_: str) -> int:
    """How many events of TYPE the log holds."""
    row = db.connect().execute("SELECT COUNT(*) FROM events WHERE type = ?", (type_,)).fetchone()
    return int(row[0])
