"""The poller's ledger: what it has seen of each labelled item, and its cycles."""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from the_loop.store.db import Database


@dataclass(frozen=True, slots=True)
class SeenItem:
    repo: str
    number: int
    is_pull: bool
    state: str
    updated_at: str
    baseline_at: str
    baseline_comment_id: int = 0


class CycleRecord(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    started_at: float
    seconds: float
    repos: int
    requests: int
    not_modified: int
    ok: bool
    error: str | None = None


def seen(conn: sqlite3.Connection, repo: str) -> dict[int, SeenItem]:
    rows = conn.execute(
        "SELECT repo, number, is_pull, state, updated_at, baseline_at, baseline_comment_id"
        " FROM poll_items WHERE repo = ?",
        (repo,),
    )
    return {
        int(r[1]): SeenItem(r[0], int(r[1]), bool(r[2]), r[3], r[4], r[5], int(r[6])) for r in rows
    }


def remember(db: Database, item: SeenItem) -> None:
    now = time.time()
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO poll_items (repo, number, is_pull, state, updated_at, baseline_at,"
            " baseline_comment_id, first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (repo, number) DO UPDATE SET is_pull = excluded.is_pull,"
            " state = excluded.state, updated_at = excluded.updated_at,"
            " baseline_at = excluded.baseline_at,"
            " baseline_comment_id = excluded.baseline_comment_id, last_seen = excluded.last_seen",
            (
                item.repo,
                item.number,
                int(item.is_pull),
                item.state,
                item.updated_at,
                item.baseline_at,
                item.baseline_comment_id,
                now,
                now,
            ),
        )


def record_cycle(db: Database, cycle: CycleRecord) -> None:
    with db.transaction() as tx:
        tx.execute(
            "INSERT INTO poll_cycles (started_at, seconds, repos, requests, not_modified, ok,"
            " error) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                cycle.started_at,
                cycle.seconds,
                cycle.repos,
                cycle.requests,
                cycle.not_modified,
                int(cycle.ok),
                cycle.error,
            ),
        )
        tx.execute("DELETE FROM poll_cycles WHERE id < (SELECT MAX(id) - 1000 FROM poll_cycles)")


def last_cycle(db: Database) -> CycleRecord | None:
    row = (
        db.connect()
        .execute(
            "SELECT started_at, seconds, repos, requests, not_modified, ok, error FROM poll_cycles"
            " ORDER BY id DESC LIMIT 1"
        )
        .fetchone()
    )
    if row is None:
        return None
    return CycleRecord(
        started_at=row[0],
        seconds=row[1],
        repos=row[2],
        requests=row[3],
        not_modified=row[4],
        ok=bool(row[5]),
        error=row[6],
    )
