"""Reads shared by the model-returning store modules, as plain rows: ``store.sessions``,
``store.events``, ``store.usage`` and ``store.inbox`` build their models from these rows, and
``pricing`` adds up ``ModelSum`` rows without loading the models.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, NamedTuple

from the_loop.errors import BadInput
from the_loop.store.conn import Connection


def migration_names(conn: Connection) -> list[str]:
    """The names of the migrations applied, sorted."""
    return sorted(str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations"))


# --- sessions --------------------------------------------------------------------------------

LIVE = ("queued", "active", "paused", "orphaned")
SESSION_COLUMNS = (
    "id, work_item, harness, harness_session_id, runner, tmux_target, cwd, status, title, url,"
    " created_at, started_at, last_event_at, closed_at, close_reason, node"
)
SESSION_NAMES = tuple(c.strip() for c in SESSION_COLUMNS.split(","))


def session_rows(
    conn: Connection, status: str | None = None, limit: int | None = None
) -> list[tuple[Any, ...]]:
    """Sessions newest first (``SESSION_COLUMNS``), optionally of one STATUS, at most LIMIT."""
    sql = f"SELECT {SESSION_COLUMNS} FROM sessions"
    args: list[Any] = []
    if status is not None:
        sql += " WHERE status = ?"
        args.append(status)
    sql += " ORDER BY created_at DESC"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [tuple(r) for r in conn.execute(sql, args).fetchall()]


def session_counts(conn: Connection) -> dict[str, int]:
    """How many sessions have each status (statuses without sessions are absent)."""
    rows = conn.execute("SELECT status, COUNT(*) FROM sessions GROUP BY status")
    return {str(r[0]): int(r[1]) for r in rows}


def inbox_counts(conn: Connection) -> dict[str, int]:
    """How many inbox rows have each status."""
    rows = conn.execute("SELECT status, COUNT(*) FROM inbox GROUP BY status")
    return {str(r[0]): int(r[1]) for r in rows}


# --- usage -----------------------------------------------------------------------------------


class ModelSum(NamedTuple):
    """Tokens of one model summed over some entries, and the turns among them."""

    model: str
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    turns: int


SUMS = (
    "SELECT model, SUM(input_tokens), SUM(output_tokens), SUM(cache_creation_tokens),"
    " SUM(cache_read_tokens), SUM(CASE WHEN kind = 'turn' THEN 1 ELSE 0 END)"
    " FROM usage_entries"
)


def sums(rows: list[tuple[Any, ...]]) -> list[ModelSum]:
    return [ModelSum(str(r[0]), *(int(v or 0) for v in r[1:6])) for r in rows]


def sums_of_agents(conn: Connection, agents: list[str]) -> dict[str, list[ModelSum]]:
    """Per agent of AGENTS (those with entries), its sums by model."""
    out: dict[str, list[ModelSum]] = {}
    for start in range(0, len(agents), 500):
        chunk = agents[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = conn.execute(
            SUMS.replace("SELECT ", "SELECT agent, ", 1)
            + f" WHERE agent IN ({marks}) GROUP BY agent, model",
            chunk,
        ).fetchall()
        for row in rows:
            out.setdefault(str(row[0]), []).extend(sums([row[1:]]))
    return out


# --- events ----------------------------------------------------------------------------------


class Level(IntEnum):
    debug = 10
    info = 20
    warning = 30
    error = 40

    @classmethod
    def parse(cls, text: str) -> Level:
        try:
            return cls[text.lower()]
        except KeyError:
            raise BadInput(f"invalid level {text!r}: one of debug, info, warning, error") from None


class EventFilter(NamedTuple):
    """What ``query`` and ``follow`` select; every field narrows the selection."""

    types: tuple[str, ...] = ()
    work_item: str | None = None
    standing: str | None = None
    min_level: Level = Level.debug
    since: float | None = None
    after_id: int = 0
    limit: int | None = 100

    def following(self, after_id: int) -> EventFilter:
        """The same selection, for events after AFTER_ID, unlimited and without ``since``."""
        return EventFilter(
            self.types, self.work_item, self.standing, self.min_level, None, after_id, None
        )


EVENT_COLUMNS = "id, ts, type, level, source, work_item, standing, session_id, delivery_id, payload"


def event_where(f: EventFilter) -> tuple[str, list[Any]]:
    clauses = ["id > ?"]
    args: list[Any] = [f.after_id]
    if f.types:
        clauses.append("(" + " OR ".join("glob(?, type)" for _ in f.types) + ")")
        args.extend(f.types)
    if f.work_item is not None:
        clauses.append("work_item = ?")
        args.append(f.work_item)
    if f.standing is not None:
        clauses.append("standing = ?")
        args.append(f.standing)
    if f.min_level > Level.debug:
        clauses.append("level >= ?")
        args.append(int(f.min_level))
    if f.since is not None:
        clauses.append("ts >= ?")
        args.append(f.since)
    return " AND ".join(clauses), args


def newest_event_rows(conn: Connection, f: EventFilter) -> list[tuple[Any, ...]]:
    """The newest ``limit`` events matching F (``EVENT_COLUMNS``), oldest first."""
    where, args = event_where(f)
    sql = f"SELECT {EVENT_COLUMNS} FROM events WHERE {where} ORDER BY id DESC"
    if f.limit is not None:
        sql += " LIMIT ?"
        args.append(f.limit)
    return [tuple(r) for r in reversed(conn.execute(sql, args).fetchall())]


def level_name(level: int) -> str:
    """The name of a stored level (its number when it is not one of ``Level``)."""
    return Level(level).name if level in Level._value2member_map_ else str(level)
