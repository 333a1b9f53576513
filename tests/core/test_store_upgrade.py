"""A database at the schema the previous release left (``0024_attention_turns``, frozen in
``tests/core/data``) opens with this code: its rows are intact, keep the order they had, and
what is written next comes after them. On SQLite and on PostgreSQL."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS
from tests.pg import PgServer
from the_loop.errors import StateError
from the_loop.store import events, inbox, open_database, prompts, sessions
from the_loop.store.base import Database
from the_loop.store.db import DB_NAME
from the_loop.store.events import NewEvent
from the_loop.store.migrations import MIGRATIONS

DATA = Path(__file__).parent / "data"
Execute = Callable[[str, tuple[Any, ...]], object]

INBOX = (
    "INSERT INTO inbox (delivery_id, event, source, payload, status, attempts, received_at,"
    " updated_at, next_attempt_at, work, lane) VALUES (?, 'issue_comment', 'webhook', ?,"
    " 'pending', 0, ?, ?, ?, ?, 'octo/repo#7')"
)
SESSION = (
    "INSERT INTO sessions (id, work_item, harness, runner, cwd, status, created_at,"
    " last_event_at) VALUES (?, ?, 'fake', 'tmux', '/tmp', 'queued', ?, ?)"
)


def _seed(execute: Execute) -> None:
    """Rows as the previous release wrote them: a delivery received later but written first,
    three of one group commit; two sessions queued in one instant."""
    for delivery, at in (("late", 200.0), ("c1", 100.0), ("c2", 100.0), ("c3", 100.0)):
        execute(INBOX, (delivery, f'{{"n":"{delivery}"}}'.encode(), at, at, at, f"w-{delivery}"))
    for sid in ("sB", "sA"):
        execute(SESSION, (sid, f"github:octo/repo#{sid}", 10.0, 10.0))
    execute(
        "INSERT INTO events (ts, type, level, source, payload) VALUES (1, 'x.y', 20, 't', '{}')",
        (),
    )
    execute(
        "INSERT INTO agent_prompts (agent, prompt, status, created_at)"
        " VALUES ('sA', 'hello', 'pending', 1)",
        (),
    )


def _sqlite_at_0024(state_dir: Path) -> None:
    state_dir.mkdir(parents=True)
    conn = sqlite3.connect(state_dir / DB_NAME)
    conn.executescript((DATA / "schema-0024-sqlite.sql").read_text())
    _seed(conn.execute)
    conn.commit()
    conn.close()


def _postgresql_at_0024(url: str) -> None:
    import psycopg

    from the_loop.store.pg import placeholders

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((DATA / "schema-0024-postgresql.sql").read_bytes())
        _seed(lambda sql, args: conn.execute(placeholders(sql).encode(), args))


@pytest.fixture(params=BACKENDS)
def old_database(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Path, str | None]]:
    """The state dir and URL of a database at ``0024_attention_turns`` with rows in it."""
    if request.param == "sqlite":
        _sqlite_at_0024(tmp_path / "state")
        yield tmp_path / "state", None
        return
    server: PgServer = request.getfixturevalue("pg_server")
    name = f"u_{uuid.uuid4().hex[:16]}"
    server.admin(f'CREATE DATABASE "{name}"')
    _postgresql_at_0024(server.url(name))
    yield tmp_path / "state", server.url(name)
    server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _inbox_rows(db: Database) -> list[tuple[Any, ...]]:
    rows = db.connect().execute(
        "SELECT delivery_id, payload, status, received_at, work, lane FROM inbox"
        " ORDER BY delivery_id"
    )
    return [(r[0], bytes(r[1]), *r[2:]) for r in rows]


def test_an_old_database_upgrades_with_its_rows_intact_and_in_order(
    old_database: tuple[Path, str | None],
) -> None:
    state_dir, url = old_database
    db = open_database(state_dir, url)
    assert db.applied_migrations() == [name for name, _ in MIGRATIONS]
    assert _inbox_rows(db) == [
        (d, f'{{"n":"{d}"}}'.encode(), "pending", at, f"w-{d}", "octo/repo#7")
        for d, at in (("c1", 100.0), ("c2", 100.0), ("c3", 100.0), ("late", 200.0))
    ]
    inbox.accept(db, "new", "issue_comment", b"{}", "webhook")
    with db.transaction() as tx:  # the next ones continue the old numbering
        assert events.insert(tx, NewEvent(2, "x.z", 20, "t", None, None, None, None, "{}")) == 2
        assert prompts.add(tx, "sA", "again", None) == 2
    taken = []
    while (claimed := inbox.claim_next(db, now=1e12)) is not None:
        taken.append(claimed.item.delivery_id)
    assert taken == ["c1", "c2", "c3", "late", "new"]
    queued = sessions.oldest_queued(db.connect())
    assert queued is not None and queued.id == "sB"  # queued first, in the same instant
    db.close()
    again = open_database(state_dir, url)  # nothing left to apply
    assert again.applied_migrations() == [name for name, _ in MIGRATIONS]


def test_an_sqlite_too_old_for_the_store_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite3, "sqlite_version_info", (3, 31, 1))
    monkeypatch.setattr(sqlite3, "sqlite_version", "3.31.1")
    with pytest.raises(StateError) as info:
        open_database(tmp_path)
    assert str(info.value) == (
        "the state database needs SQLite 3.35 or newer; this Python has 3.31.1"
    )
