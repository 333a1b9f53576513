"""The poller's ledger: what it has seen of each labelled item, its cycles, and the closure
checks still owed (table ``poll_closure_checks``: a live session whose item left the last
complete listing, checked again every cycle until GitHub answers; kept across restarts)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from the_loop.store.conn import Connection
from the_loop.store.db import Database
from the_loop.wire import Timestamp


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

    started_at: Timestamp
    seconds: float
    repos: int
    requests: int
    not_modified: int
    ok: bool
    error: str | None = None


def seen(conn: Connection, repo: str) -> dict[int, SeenItem]:
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


@dataclass(frozen=True, slots=True)
class ClosureCheck:
    """A closure check still owed: is item NUMBER of REPO (session of WORK_ITEM) closed?"""

    repo: str
    number: int
    work_item: str
    attempts: int = 0
    last_error: str | None = None


def owe_closure_checks(db: Database, repo: str, checks: list[ClosureCheck]) -> None:
    """After a complete listing of REPO: the checks owed are exactly CHECKS (the live sessions
    whose items are not listed); those already owed keep their attempts, the others go."""
    now = time.time()
    with db.transaction() as tx:
        wanted = {check.number for check in checks}
        for (number,) in tx.execute(
            "SELECT number FROM poll_closure_checks WHERE repo = ?", (repo,)
        ).fetchall():
            if int(number) not in wanted:
                tx.execute(
                    "DELETE FROM poll_closure_checks WHERE repo = ? AND number = ?", (repo, number)
                )
        for check in checks:
            tx.execute(
                "INSERT INTO poll_closure_checks (repo, number, work_item, since)"
                " VALUES (?, ?, ?, ?) ON CONFLICT (repo, number) DO UPDATE SET"
                " work_item = excluded.work_item",
                (repo, check.number, check.work_item, now),
            )


def closure_checks(conn: Connection, repo: str) -> list[ClosureCheck]:
    """The closure checks owed for REPO, oldest first."""
    rows = conn.execute(
        "SELECT repo, number, work_item, attempts, last_error FROM poll_closure_checks"
        " WHERE repo = ? ORDER BY since, number",
        (repo,),
    )
    return [ClosureCheck(r[0], int(r[1]), r[2], int(r[3]), r[4]) for r in rows]


def closure_answered(db: Database, repo: str, number: int) -> None:
    """GitHub answered the closure check of item NUMBER of REPO: it is owed no more."""
    with db.transaction() as tx:
        tx.execute("DELETE FROM poll_closure_checks WHERE repo = ? AND number = ?", (repo, number))


def closure_failed(db: Database, repo: str, number: int, error: str) -> None:
    """The closure check of item NUMBER of REPO failed with ERROR; it stays owed."""
    with db.transaction() as tx:
        tx.execute(
            "UPDATE poll_closure_checks SET attempts = attempts + 1, last_error = ?"
            " WHERE repo = ? AND number = ?",
            (error[:500], repo, number),
        )
