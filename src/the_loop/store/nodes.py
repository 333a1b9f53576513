"""Nodes: one row per daemon sharing the database, with its heartbeat; and what declaring one
dead changes (its live sessions ``orphaned``, its inbox claims and forwarded items released).

Times are the writers' wall clocks (``time.time()``): the nodes of a cluster keep their clocks
in step (NTP), as any lease-based system needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from the_loop.store.conn import Connection
from the_loop.wire import Timestamp, Wire

_COLUMNS = "name, pid, url, capacity, started_at, heartbeat_at, dead_at, cluster"
_NAMES = [c.strip() for c in _COLUMNS.split(",")]


class NodeRecord(Wire):
    """One node as stored."""

    name: str
    pid: int
    url: str = ""
    capacity: int = 0
    """``routing.maxConcurrentSessions`` of that node when it last beat."""
    started_at: Timestamp
    heartbeat_at: Timestamp
    dead_at: Timestamp | None = None
    """When another node declared it dead (None while it counts as alive)."""
    cluster: bool = False
    """Whether it takes node-to-node requests (it has a cluster token)."""


def _record(row: tuple[Any, ...]) -> NodeRecord:
    return NodeRecord.model_validate(dict(zip(_NAMES, row, strict=True)))


def register(tx: Connection, rec: NodeRecord) -> None:
    """Write REC as this node's row (alive, beating now), whatever an earlier run left."""
    tx.execute(
        f"INSERT INTO nodes ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT (name) DO"
        " UPDATE SET pid = excluded.pid, url = excluded.url, capacity = excluded.capacity,"
        " started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, dead_at = NULL,"
        " cluster = excluded.cluster",
        (
            rec.name,
            rec.pid,
            rec.url,
            rec.capacity,
            rec.started_at,
            rec.heartbeat_at,
            int(rec.cluster),
        ),
    )


def beat(tx: Connection, name: str, now: float, capacity: int) -> bool:
    """Renew NAME's heartbeat; False when NAME was declared dead (or has no row): the node
    must then rejoin (``rejoin``) before it claims anything."""
    cur = tx.execute(
        "UPDATE nodes SET heartbeat_at = ?, capacity = ? WHERE name = ? AND dead_at IS NULL",
        (now, capacity, name),
    )
    return cur.rowcount > 0


def rejoin(tx: Connection, name: str, now: float) -> None:
    """NAME, declared dead, counts as alive again from NOW."""
    tx.execute("UPDATE nodes SET dead_at = NULL, heartbeat_at = ? WHERE name = ?", (now, name))


def get(conn: Connection, name: str) -> NodeRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM nodes WHERE name = ?", (name,)).fetchone()
    return _record(row) if row else None


def list_nodes(conn: Connection) -> list[NodeRecord]:
    return [_record(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM nodes ORDER BY name")]


def stale(conn: Connection, before: float, other_than: str) -> list[str]:
    """Nodes not yet declared dead whose last heartbeat is older than BEFORE."""
    rows = conn.execute(
        "SELECT name FROM nodes WHERE dead_at IS NULL AND heartbeat_at < ? AND name <> ?",
        (before, other_than),
    )
    return [str(r[0]) for r in rows]


@dataclass
class Declared:
    """What declaring a node dead changed."""

    name: str
    heartbeat_at: float
    orphaned: list[tuple[str, str]] = field(default_factory=list)
    """(session id, work item) of each session marked ``orphaned``."""
    released: int = 0
    """Inbox items it had claimed (or that were forwarded to it), ready again for any node."""


def declare_dead(tx: Connection, name: str, before: float, now: float) -> Declared | None:
    """In the caller's write transaction: when NAME's heartbeat is still older than BEFORE
    (checked again here: the node may have beaten meanwhile), mark it dead, its started live
    sessions ``orphaned`` (each remembering whether it was paused) and its inbox claims
    released; None when it is alive after all."""
    row = tx.execute(
        "SELECT heartbeat_at FROM nodes WHERE name = ? AND dead_at IS NULL AND heartbeat_at < ?",
        (name, before),
    ).fetchone()
    if row is None:
        return None
    found = Declared(name=name, heartbeat_at=float(row[0]))
    tx.execute("UPDATE nodes SET dead_at = ? WHERE name = ?", (now, name))
    rows = tx.execute(
        "SELECT id, work_item FROM sessions WHERE node = ? AND status IN ('active', 'paused')",
        (name,),
    ).fetchall()
    found.orphaned = [(str(r[0]), str(r[1])) for r in rows]
    tx.execute(
        "UPDATE sessions SET orphaned_from = status, status = 'orphaned', last_event_at = ?"
        " WHERE node = ?"
        " AND status IN ('active', 'paused')",
        (now, name),
    )
    found.released = release_claims(tx, now)
    return found


def release_claims(tx: Connection, now: float) -> int:
    """Make ready again every inbox item claimed by, or forwarded to, a node declared dead."""
    claimed = tx.execute(
        "UPDATE inbox SET status = 'pending', claimed_by = NULL, node = NULL, updated_at = ?"
        " WHERE status = 'processing' AND claimed_by IN"
        " (SELECT name FROM nodes WHERE dead_at IS NOT NULL)",
        (now,),
    ).rowcount
    forwarded = tx.execute(
        "UPDATE inbox SET node = NULL, updated_at = ? WHERE status IN ('pending', 'failed')"
        " AND node IN (SELECT name FROM nodes WHERE dead_at IS NOT NULL)",
        (now,),
    ).rowcount
    return max(claimed, 0) + max(forwarded, 0)


def adopt_sessions(tx: Connection, name: str, only_unowned: bool) -> int:
    """Record NAME as the node of live sessions without one (written before nodes existed);
    with ONLY_UNOWNED false, of every live session (SQLite: there is one node)."""
    where = "node IS NULL" if only_unowned else "(node IS NULL OR node <> ?)"
    args: tuple[Any, ...] = (name,) if only_unowned else (name, name)
    cur = tx.execute(
        f"UPDATE sessions SET node = ? WHERE {where}"
        " AND status IN ('queued', 'active', 'paused', 'orphaned')",
        args,
    )
    return max(cur.rowcount, 0)


def running_on(conn: Connection, name: str) -> int:
    """Sessions holding one of NAME's slots (active or paused there)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM sessions WHERE node = ? AND status IN ('active', 'paused')",
        (name,),
    ).fetchone()
    return int(row[0])


def with_free_slots(conn: Connection, alive_after: float, other_than: str) -> list[str]:
    """Live nodes (beating after ALIVE_AFTER, not dead) other than OTHER_THAN that run fewer
    sessions than their capacity, the emptiest first."""
    rows = conn.execute(
        "SELECT n.name, n.capacity - (SELECT COUNT(*) FROM sessions s WHERE s.node = n.name"
        " AND s.status IN ('active', 'paused')) AS free FROM nodes n WHERE n.dead_at IS NULL"
        " AND n.heartbeat_at >= ? AND n.name <> ? ORDER BY free DESC, n.name",
        (alive_after, other_than),
    )
    return [str(r[0]) for r in rows if int(r[1]) > 0]
