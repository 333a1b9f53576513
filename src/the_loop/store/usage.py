"""The ``usage_entries``, ``usage_sources`` and ``spend`` tables: what agents spent, where the
meter has read up to, and the holds (suspended, over-budget) and extensions of each agent.

One ``usage_entries`` row per model message (keyed by the message id the harness recorded, so
a message written on several transcript lines counts once: each token kind keeps the largest
figure seen) or per turn (kind ``turn``). Sums are grouped by model so the caller prices them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from the_loop.store.conn import Connection
from the_loop.store.rows import SUMS, sums
from the_loop.store.rows import ModelSum as ModelSum  # re-exported
from the_loop.store.rows import sums_of_agents as sums_of_agents  # re-exported
from the_loop.wire import Wire

MESSAGE = "message"
TURN = "turn"
SUSPENDED = "suspended"
OVER_BUDGET = "over-budget"


@dataclass(frozen=True, slots=True)
class Entry:
    """One model message (tokens by kind) or one turn, as the meter read it."""

    entry: str
    kind: str
    model: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0


@dataclass(frozen=True, slots=True)
class Spend:
    """One agent's hold (None, ``suspended``, ``over-budget``) and extensions."""

    agent: str
    hold: str | None
    hold_reason: str
    held_at: float | None
    holds: int
    extra_usd: float
    extra_turns: int
    waiting_since: float | None


def _larger(column: str) -> str:
    """Keep the larger of the stored and the new figure (portable: no two-argument MAX)."""
    return (
        f"{column} = CASE WHEN excluded.{column} > usage_entries.{column}"
        f" THEN excluded.{column} ELSE usage_entries.{column} END"
    )


def add_entries(tx: Connection, agent: str, entries: list[Entry], day: str, at: float) -> int:
    """Record ENTRIES of AGENT read on DAY at AT; a known entry keeps the larger figure of each
    token kind (and its first day). Returns how many were given."""
    for e in entries:
        tx.execute(
            "INSERT INTO usage_entries (agent, entry, kind, model, input_tokens, output_tokens,"
            " cache_creation_tokens, cache_read_tokens, day, at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent, entry) DO UPDATE SET"
            f" {_larger('input_tokens')}, {_larger('output_tokens')},"
            f" {_larger('cache_creation_tokens')}, {_larger('cache_read_tokens')},"
            " model = CASE WHEN excluded.model != '' THEN excluded.model"
            " ELSE usage_entries.model END",
            (
                agent,
                e.entry,
                e.kind,
                e.model,
                e.input_tokens,
                e.output_tokens,
                e.cache_creation_tokens,
                e.cache_read_tokens,
                day,
                at,
            ),
        )
    return len(entries)


def sums_of_work_item(conn: Connection, work_item: str) -> list[ModelSum]:
    """Sums by model over every session of WORK_ITEM (respawns and earlier sessions)."""
    rows = conn.execute(
        SUMS + " WHERE agent IN (SELECT id FROM sessions WHERE work_item = ?) GROUP BY model",
        (work_item,),
    ).fetchall()
    return sums(rows)


def sums_of_day(conn: Connection, day: str) -> list[ModelSum]:
    """Sums by model of everything recorded on DAY (``YYYY-MM-DD``, UTC)."""
    return sums(conn.execute(SUMS + " WHERE day = ? GROUP BY model", (day,)).fetchall())


def days(conn: Connection, limit: int) -> list[str]:
    """The newest LIMIT days with entries, newest first."""
    rows = conn.execute(
        "SELECT DISTINCT day FROM usage_entries ORDER BY day DESC LIMIT ?", (limit,)
    ).fetchall()
    return [str(r[0]) for r in rows]


# --- where the meter has read up to ---------------------------------------------------------


def read_bytes(conn: Connection, agent: str, path: str) -> int:
    row = conn.execute(
        "SELECT read_bytes FROM usage_sources WHERE agent = ? AND path = ?", (agent, path)
    ).fetchone()
    return int(row[0]) if row else 0


def set_read_bytes(tx: Connection, agent: str, path: str, size: int, now: float) -> None:
    tx.execute(
        "INSERT INTO usage_sources (agent, path, read_bytes, read_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (agent, path) DO UPDATE SET read_bytes = excluded.read_bytes,"
        " read_at = excluded.read_at",
        (agent, path, size, now),
    )


def transcripts(conn: Connection, agents: list[str]) -> dict[str, str]:
    """The transcript path each of AGENTS' harness reported (through its hooks), if any."""
    out: dict[str, str] = {}
    for start in range(0, len(agents), 500):
        chunk = agents[start : start + 500]
        rows = conn.execute(
            "SELECT agent, transcript FROM attention WHERE transcript IS NOT NULL"
            f" AND agent IN ({', '.join('?' * len(chunk))})",
            chunk,
        ).fetchall()
        out.update({str(r[0]): str(r[1]) for r in rows})
    return out


# --- holds and extensions -------------------------------------------------------------------

_SPEND = "agent, hold, hold_reason, held_at, holds, extra_usd, extra_turns, waiting_since"


def _spend(row: tuple[Any, ...]) -> Spend:
    return Spend(
        str(row[0]),
        row[1],
        str(row[2]),
        row[3],
        int(row[4]),
        float(row[5]),
        int(row[6]),
        row[7],
    )


def get_spend(conn: Connection, agent: str) -> Spend:
    """AGENT's hold and extensions (no hold, no extension when nothing was recorded)."""
    row = conn.execute(f"SELECT {_SPEND} FROM spend WHERE agent = ?", (agent,)).fetchone()
    return _spend(row) if row else Spend(agent, None, "", None, 0, 0.0, 0, None)


def held(conn: Connection) -> list[Spend]:
    """Every agent with a hold."""
    rows = conn.execute(f"SELECT {_SPEND} FROM spend WHERE hold IS NOT NULL").fetchall()
    return [_spend(r) for r in rows]


def holds_of(conn: Connection, agents: list[str]) -> dict[str, str]:
    """The hold of each of AGENTS that has one."""
    found = {s.agent: s.hold for s in held(conn) if s.hold}
    return {a: found[a] for a in agents if a in found}


def _ensure(tx: Connection, agent: str) -> None:
    tx.execute("INSERT INTO spend (agent) VALUES (?) ON CONFLICT (agent) DO NOTHING", (agent,))


def set_hold(tx: Connection, agent: str, hold: str, reason: str, now: float) -> int:
    """Put AGENT on HOLD for REASON; returns its count of holds so far (this one included)."""
    _ensure(tx, agent)
    tx.execute(
        "UPDATE spend SET hold = ?, hold_reason = ?, held_at = ?, holds = holds + 1,"
        " waiting_since = NULL WHERE agent = ?",
        (hold, reason, now, agent),
    )
    return get_spend(tx, agent).holds


def clear_hold(tx: Connection, agent: str, hold: str | None = None) -> bool:
    """Lift AGENT's hold (only if it is HOLD, when given); False when there was none."""
    sql = "UPDATE spend SET hold = NULL, hold_reason = '', waiting_since = NULL WHERE agent = ?"
    args: list[Any] = [agent]
    if hold is not None:
        sql += " AND hold = ?"
        args.append(hold)
    else:
        sql += " AND hold IS NOT NULL"
    return tx.execute(sql, args).rowcount == 1


def extend(tx: Connection, agent: str, usd: float, turns: int) -> Spend:
    """Add USD and TURNS to AGENT's allowance."""
    _ensure(tx, agent)
    tx.execute(
        "UPDATE spend SET extra_usd = extra_usd + ?, extra_turns = extra_turns + ? WHERE agent = ?",
        (usd, turns, agent),
    )
    return get_spend(tx, agent)


def extras_of_work_item(conn: Connection, work_item: str) -> tuple[float, int]:
    """The extensions (dollars, turns) given to every session of WORK_ITEM together."""
    row = conn.execute(
        "SELECT COALESCE(SUM(extra_usd), 0), COALESCE(SUM(extra_turns), 0) FROM spend"
        " WHERE agent IN (SELECT id FROM sessions WHERE work_item = ?)",
        (work_item,),
    ).fetchone()
    return float(row[0]), int(row[1])


def mark_waiting(tx: Connection, agent: str, now: float) -> bool:
    """Record that AGENT's resume waits for admission (the first time only); True when new."""
    cur = tx.execute(
        "UPDATE spend SET waiting_since = ? WHERE agent = ? AND waiting_since IS NULL",
        (now, agent),
    )
    return cur.rowcount == 1


def waiting_resumes(conn: Connection) -> list[Spend]:
    """Suspended agents whose resume waits for admission, oldest first."""
    rows = conn.execute(
        f"SELECT {_SPEND} FROM spend WHERE waiting_since IS NOT NULL ORDER BY waiting_since"
    ).fetchall()
    return [_spend(r) for r in rows]


class Usage(Wire):
    """What an agent (or a work item, or a day) spent: tokens by kind, turns, and the cost
    estimated from ``budgets.prices`` (models without a price are named in
    ``unpricedModels`` and count no dollars; ``priced`` is then false, and ``costUsd`` is null
    when no token has a price: unknown, not zero)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_tokens: int = 0
    cache_read_tokens: int = 0
    turns: int = 0
    cost_usd: float | None = 0.0
    priced: bool = True
    models: list[str] = []
    unpriced_models: list[str] = []
