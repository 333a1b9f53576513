"""The PostgreSQL backend on a real server: migrations, claims and locks shared by two
``Database`` objects (two nodes), transactions, and clear errors."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import wait_until
from tests.pg import PgServer
from the_loop.config import parse_config_text
from the_loop.errors import ConfigInvalid, Conflict, StateError
from the_loop.store import inbox, open_database, prompts, sessions
from the_loop.store.migrations import MIGRATIONS
from the_loop.store.pg import PgDatabase, open_postgres, placeholders, redact
from the_loop.store.sessions import SessionRecord, SessionStatus


def _session(work_item: str, sid: str) -> SessionRecord:
    now = time.time()
    return SessionRecord(
        id=sid,
        work_item=work_item,
        harness="fake",
        runner="tmux",
        cwd="/tmp",
        status=SessionStatus.active,
        created_at=now,
        last_event_at=now,
    )


def test_migrations_are_applied_once_and_recorded(pg_url: str, tmp_path: Path) -> None:
    db = open_database(tmp_path, pg_url)
    assert db.kind == "postgresql" and db.shared
    assert db.applied_migrations() == [name for name, _ in MIGRATIONS]
    stamps = db.connect().execute("SELECT name, applied_at FROM schema_migrations").fetchall()
    db.close()
    again = open_postgres(pg_url)
    assert again.connect().execute("SELECT name, applied_at FROM schema_migrations").fetchall() == (
        stamps
    )


def test_two_nodes_claiming_at_once_take_each_item_once(pg_url: str) -> None:
    nodes = [open_postgres(pg_url), open_postgres(pg_url)]
    for i in range(200):
        inbox.accept(nodes[i % 2], f"c{i}", "issues", b"{}", "webhook")
    taken: list[str] = []
    guard = threading.Lock()

    def worker(db: PgDatabase) -> None:
        while (claimed := inbox.claim_next(db)) is not None:
            with guard:
                taken.append(claimed.item.delivery_id)

    threads = [threading.Thread(target=worker, args=(nodes[i % 2],)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert sorted(taken) == sorted(f"c{i}" for i in range(200))


def test_a_claim_skips_a_row_another_claim_holds_and_never_waits_for_writers(
    pg_url: str,
) -> None:
    a, b = open_postgres(pg_url), open_postgres(pg_url)
    inbox.accept(a, "d1", "issues", b"{}", "webhook")
    inbox.accept(a, "d2", "issues", b"{}", "webhook")
    with a.claim_transaction() as held, a.transaction():
        held.execute("SELECT delivery_id FROM inbox WHERE delivery_id = ? FOR UPDATE", ("d1",))
        # d1 is row-locked and the write lock is taken: the other node still claims d2
        claimed = inbox.claim_next(b)
        assert claimed is not None and claimed.item.delivery_id == "d2"
        assert inbox.claim_next(b) is None
    claimed = inbox.claim_next(b)
    assert claimed is not None and claimed.item.delivery_id == "d1"


def test_one_live_session_per_item_across_nodes(pg_url: str) -> None:
    nodes = [open_postgres(pg_url), open_postgres(pg_url)]
    won: list[str] = []
    lost: list[str] = []
    guard = threading.Lock()

    def race(i: int) -> None:
        db = nodes[i % 2]
        try:
            with db.transaction() as tx:
                if sessions.live_for(tx, "github:o/r#1") is None:
                    sessions.insert(tx, _session("github:o/r#1", f"s{i}"))
                    outcome = won
                else:
                    outcome = lost
        except Conflict:
            outcome = lost
        with guard:
            outcome.append(f"s{i}")

    threads = [threading.Thread(target=race, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(won) == 1 and len(lost) == 19
    live = sessions.live_for(nodes[0].connect(), "github:o/r#1")
    assert live is not None and live.id == won[0]


def test_a_caught_integrity_error_keeps_the_transaction(pg_url: str) -> None:
    db = open_postgres(pg_url)
    with db.transaction() as tx:
        sessions.insert(tx, _session("github:o/r#2", "s1"))
        first = prompts.add(tx, "s1", "hello", "dlv-1")
        assert prompts.add(tx, "s1", "hello again", "dlv-1") is None  # the unique index
        with pytest.raises(Conflict):
            sessions.insert(tx, _session("github:o/r#2", "s2"))
        second = prompts.add(tx, "s1", "later", "dlv-2")
    assert first is not None and second is not None and second > first
    assert [p.text for p in prompts.pending(db.connect(), "s1")] == ["hello", "later"]


def test_a_failed_transaction_rolls_back_everything(pg_url: str) -> None:
    db = open_postgres(pg_url)
    with pytest.raises(RuntimeError), db.transaction() as tx:
        inbox.accept_in(tx, inbox.Acceptance("d1", "issues", b"{}", "webhook"))
        raise RuntimeError("boom")
    assert inbox.counts(db) == {}


OTHER_NODE = """
import sys
from the_loop.store.pg import open_postgres
with open_postgres(sys.argv[1]).item_lock(sys.argv[2]):
    print("held", flush=True)
"""


def test_item_locks_exclude_each_other_across_nodes(pg_url: str) -> None:
    a = open_postgres(pg_url)
    waiting = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
    with a.item_lock("o-r-1"):
        other = subprocess.Popen(
            [sys.executable, "-c", OTHER_NODE, pg_url, "o-r-1"], stdout=subprocess.PIPE, text=True
        )
        try:
            wait_until(lambda: a.connect().execute(waiting).fetchone()[0] == 1, timeout=30)
            assert other.poll() is None  # it waits in PostgreSQL for this node's lock
            with a.item_lock("o-r-2"):  # another key is free meanwhile
                pass
        except BaseException:
            other.kill()
            raise
    out, _ = other.communicate(timeout=30)
    assert other.returncode == 0 and out == "held\n"


def test_an_unreachable_server_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    url = "postgresql://someone:sekret@127.0.0.1:1/nothing"
    with pytest.raises(StateError) as info:
        open_database(tmp_path, url)
    message = str(info.value)
    assert message.startswith("cannot reach the state database postgresql://someone:***@")
    assert "sekret" not in message
    assert redact(url) == "postgresql://someone:***@127.0.0.1:1/nothing"


def test_a_read_only_database_is_a_clear_error(pg_server: PgServer, pg_url: str) -> None:
    name = pg_url.rsplit("/", 1)[1]
    pg_server.admin(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
    db = open_postgres(pg_url)  # migrations done already: opening only reads
    with pytest.raises(StateError) as info:
        inbox.accept(db, "d1", "issues", b"{}", "webhook")
    assert str(info.value).startswith("cannot write the state database")
    assert inbox.counts(db) == {}


def test_connections_the_server_dropped_are_replaced(pg_server: PgServer, pg_url: str) -> None:
    db = open_postgres(pg_url)
    inbox.accept(db, "d1", "issues", b"{}", "webhook")
    name = pg_url.rsplit("/", 1)[1]
    pg_server.admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        f" WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )
    assert inbox.counts(db) == {"pending": 1}
    inbox.accept(db, "d2", "issues", b"{}", "webhook")
    assert inbox.counts(db) == {"pending": 2}


def test_a_writer_that_waits_too_long_for_the_write_lock_is_told_locked(pg_url: str) -> None:
    holder = open_postgres(pg_url)
    waiter = open_postgres(pg_url, lock_timeout_ms=200)
    with holder.transaction():
        with pytest.raises(StateError) as info:
            inbox.accept(waiter, "d1", "issues", b"{}", "webhook")
        assert "is locked" in str(info.value)
    assert inbox.accept(waiter, "d1", "issues", b"{}", "webhook").duplicate is False


def test_database_url_must_be_a_postgresql_url() -> None:
    with pytest.raises(ConfigInvalid) as info:
        parse_config_text("database:\n  url: mysql://db/x\n")
    assert "database.url" in info.value.problems[0]
    assert "postgresql://" in info.value.problems[0]
    assert parse_config_text("database:\n  url: ''\n").database.url is None


def test_placeholders_become_psycopgs_outside_literals() -> None:
    sql = "SELECT a FROM t WHERE b = ? AND c LIKE '50%?' AND d = ? AND e = 'it''s ?'"
    assert placeholders(sql) == (
        "SELECT a FROM t WHERE b = %s AND c LIKE '50%%?' AND d = %s AND e = 'it''s ?'"
    )
