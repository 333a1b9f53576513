"""Work-item session records: one live session per work item, enforced by a unique index."""

from __future__ import annotations

import time
from enum import StrEnum
from typing import Any

from the_loop.config import RunnerKind
from the_loop.errors import Conflict
from the_loop.store import prompts
from the_loop.store.conn import Connection
from the_loop.store.rows import LIVE as LIVE  # re-exported
from the_loop.store.rows import SESSION_COLUMNS, session_counts, session_rows
from the_loop.store.usage import Usage
from the_loop.wire import Timestamp, Wire


class SessionStatus(StrEnum):
    queued = "queued"
    active = "active"
    paused = "paused"
    closed = "closed"
    orphaned = "orphaned"
    """Its node was declared dead; the next event respawns it on a live node."""


class SessionRecord(Wire):
    """One agent session of a work item, as stored (and as the surfaces show it)."""

    id: str
    work_item: str
    harness: str
    harness_session_id: str | None = None
    runner: RunnerKind
    tmux_target: str | None = None
    cwd: str
    status: SessionStatus
    title: str = ""
    url: str = ""
    created_at: Timestamp
    started_at: Timestamp | None = None
    """When its agent was last started (spawned, or started again); None while queued."""
    last_event_at: Timestamp
    """When it last changed or had an event (``sessions list``'s LAST EVENT)."""
    closed_at: Timestamp | None = None
    close_reason: str | None = None
    hold: str | None = None
    """``suspended`` or ``over-budget`` while the agent is stopped by the spend policy."""
    node: str | None = None
    """The node it runs (or is queued) on; None only for sessions older than nodes."""
    usage: Usage | None = None
    """Tokens, turns and estimated cost so far (filled by the readers, not stored here)."""

    @property
    def live(self) -> bool:
        return self.status in LIVE


_COLUMNS = SESSION_COLUMNS


def _record(row: tuple[Any, ...]) -> SessionRecord:
    names = [c.strip() for c in _COLUMNS.split(",")]
    return SessionRecord.model_validate(dict(zip(names, row, strict=True)))


def insert(tx: Connection, rec: SessionRecord) -> None:
    """Insert REC; raise ``Conflict`` when the work item already has a live session."""
    values = rec.model_dump(by_alias=False)
    names = [c.strip() for c in _COLUMNS.split(",")]
    cur = tx.execute(
        f"INSERT INTO sessions ({_COLUMNS}) VALUES ({', '.join('?' * len(names))})"
        " ON CONFLICT DO NOTHING",
        [values[n] for n in names],
    )
    if cur.rowcount == 0:
        raise Conflict(f"{rec.work_item} already has a live session")


def live_for(conn: Connection, work_item: str) -> SessionRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE work_item = ? AND status IN (?, ?, ?, ?)",
        (work_item, *LIVE),
    ).fetchone()
    return _record(row) if row else None


def latest_for(conn: Connection, work_item: str) -> SessionRecord | None:
    """The live session of WORK_ITEM, else its most recently created one."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE work_item = ?"
        " ORDER BY status IN ('queued', 'active', 'paused', 'orphaned') DESC, created_at DESC"
        " LIMIT 1",
        (work_item,),
    ).fetchone()
    return _record(row) if row else None


def get(conn: Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return _record(row) if row else None


def list_sessions(
    conn: Connection, status: SessionStatus | None = None, limit: int | None = None
) -> list[SessionRecord]:
    """Sessions newest first, optionally of one STATUS."""
    return [_record(r) for r in session_rows(conn, status.value if status else None, limit)]


def live_among(conn: Connection, session_ids: list[str]) -> set[str]:
    """Which of SESSION_IDS are live sessions (``SessionRecord.live``)."""
    found: set[str] = set()
    live = ", ".join("?" * len(LIVE))
    for start in range(0, len(session_ids), 500):
        chunk = session_ids[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            f"SELECT id FROM sessions WHERE id IN ({marks}) AND status IN ({live})",
            [*chunk, *LIVE],
        )
        found.update(str(r[0]) for r in rows)
    return found


def count_running(conn: Connection, node: str | None = None) -> int:
    """Sessions holding a slot: active or paused (queued ones wait for a slot); with NODE,
    those of that node (and of none: sessions older than nodes)."""
    sql = "SELECT COUNT(*) FROM sessions WHERE status IN ('active', 'paused')"
    if node is None:
        return int(conn.execute(sql).fetchone()[0])
    row = conn.execute(f"{sql} AND (node = ? OR node IS NULL)", (node,))
    return int(row.fetchone()[0])


def oldest_queued(conn: Connection) -> SessionRecord | None:
    """The queued session to start next (created first; of those created in the same instant,
    the one inserted first); one held over budget waits for ``extend``."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM sessions WHERE status = 'queued' AND id NOT IN"
        " (SELECT agent FROM spend WHERE hold = 'over-budget')"
        " ORDER BY created_at, seq LIMIT 1"
    ).fetchone()
    return _record(row) if row else None


def update(tx: Connection, session_id: str, **fields: Any) -> None:
    """Set FIELDS (snake_case column names) on one session and touch ``last_event_at``."""
    fields.setdefault("last_event_at", time.time())
    allowed = {c.strip() for c in _COLUMNS.split(",")} - {"id", "work_item"}
    unknown = set(fields) - allowed
    if unknown:
        raise ValueError(f"unknown session fields: {sorted(unknown)}")
    assignments = ", ".join(f"{name} = ?" for name in fields)
    values = [v.value if isinstance(v, StrEnum) else v for v in fields.values()]
    tx.execute(f"UPDATE sessions SET {assignments} WHERE id = ?", [*values, session_id])


def add_prompt(tx: Connection, session_id: str, prompt: str, delivery_id: str | None) -> int | None:
    """Queue PROMPT for SESSION_ID; None when this delivery was already queued for it."""
    return prompts.add(tx, session_id, prompt, delivery_id)


def pending_prompts(conn: Connection, session_id: str) -> list[tuple[int, str, str | None, str]]:
    """(seq, prompt, delivery id, status) of prompts not yet delivered to SESSION_ID, in order;
    status is ``pending``, or ``staged`` when a paste may have happened before a crash."""
    return [
        (q.seq, q.text, q.delivery_id, q.status.value) for q in prompts.pending(conn, session_id)
    ]


def mark_prompt(tx: Connection, seq: int, status: str) -> None:
    prompts.mark(tx, seq, status)


def delivered_count(conn: Connection, session_id: str) -> int:
    return prompts.delivered_count(conn, session_id)


def counts_by_status(conn: Connection) -> dict[str, int]:
    """How many sessions have each status (statuses without sessions are absent)."""
    return session_counts(conn)


def delivered_total(conn: Connection) -> int:
    """How many prompts were delivered into any agent session."""
    return prompts.delivered_total(conn)


def paused_when_orphaned(conn: Connection, session_id: str) -> bool:
    """Whether orphaned session SESSION_ID was paused when its node was declared dead."""
    row = conn.execute(
        "SELECT orphaned_from FROM sessions WHERE id = ? AND status = 'orphaned'", (session_id,)
    ).fetchone()
    return row is not None and row[0] == SessionStatus.paused.value
