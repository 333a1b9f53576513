"""GitHub facts that must outlive a process: the authored objects already processed (replay
defence, table ``github_seen``) and the rate limits in force (table ``github_rate_limits``).

- **Seen objects**: a comment, review or review comment is keyed by its host and GitHub id
  (``WorkEvent.replay_key``) and remembers the delivery that processed it first. ``record`` is
  called inside the transaction that acts on the event (the one that queues its prompt), so a
  crash can never leave an object acted on but not remembered. Rows are kept: a captured signed
  delivery can be replayed at any time (its signature carries no date).
- **Rate limits**: the reset time of a limit GitHub reported, per API root and resource
  (``core``, ``graphql``, ``*`` for a secondary limit), shared by every process that talks to
  that API (the daemon, ``poll --once``, the CLI). Each statement is its own short autocommit
  write; a lost row only costs one request that GitHub refuses again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from the_loop.store.conn import Connection
from the_loop.store.db import Database

# --- seen objects -----------------------------------------------------------------------------


def seen_by(conn: Connection, key: str | None, other_than: str = "") -> str | None:
    """The delivery id that first processed the object KEY, unless it is OTHER_THAN (the
    asking delivery's own earlier, interrupted processing); None when no other delivery did,
    or KEY is None."""
    if key is None:
        return None
    row = conn.execute("SELECT delivery_id FROM github_seen WHERE key = ?", (key,)).fetchone()
    if row is None or row[0] == other_than:
        return None
    return str(row[0])


def record(tx: Connection, key: str | None, delivery_id: str, work_item: object | None) -> None:
    """Remember that DELIVERY_ID processed the object KEY about WORK_ITEM (a ref, kept as its
    text). The first delivery to do so stays recorded; later calls, and a KEY of None, change
    nothing."""
    if key is None:
        return
    tx.execute(
        "INSERT INTO github_seen (key, delivery_id, work_item, seen_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (key) DO NOTHING",
        (key, delivery_id, None if work_item is None else str(work_item), time.time()),
    )


# --- rate limits ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RateLimitRow:
    """A rate limit in force: nothing may be sent for RESOURCE of API_URL before RESET_AT."""

    api_url: str
    resource: str
    reset_at: float
    secondary: bool
    message: str


def rate_limits(db: Database, api_url: str, now: float) -> list[RateLimitRow]:
    """The limits of API_URL whose reset is after NOW."""
    rows = db.connect().execute(
        "SELECT api_url, resource, reset_at, secondary, message FROM github_rate_limits"
        " WHERE api_url = ? AND reset_at > ?",
        (api_url, now),
    )
    return [RateLimitRow(r[0], r[1], float(r[2]), bool(r[3]), str(r[4])) for r in rows]


def put_rate_limit(db: Database, row: RateLimitRow) -> None:
    """Store ROW, replacing the limit recorded for its API root and resource."""
    db.connect().execute(
        "INSERT INTO github_rate_limits (api_url, resource, reset_at, secondary, message,"
        " recorded_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (api_url, resource) DO UPDATE SET"
        " reset_at = excluded.reset_at, secondary = excluded.secondary,"
        " message = excluded.message, recorded_at = excluded.recorded_at",
        (row.api_url, row.resource, row.reset_at, int(row.secondary), row.message, time.time()),
    )
