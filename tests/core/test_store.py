"""The state database: migrations once, clear errors for unusable state, concurrent writers."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop.errors import StateError
from the_loop.store import open_database
from the_loop.store.migrations import MIGRATIONS


def test_migrations_run_once_and_reopen_is_a_noop(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    names = [name for name, _ in MIGRATIONS]
    assert db.applied_migrations() == names
    conn = db.connect()
    stamps = conn.execute("SELECT name, applied_at FROM schema_migrations").fetchall()
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    db.close()
    again = open_database(tmp_path)
    assert again.applied_migrations() == names
    assert (
        again.connect().execute("SELECT name, applied_at FROM schema_migrations").fetchall()
        == stamps
    )


def test_corrupt_database_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "the-loop.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StateError) as info:
        open_database(tmp_path)
    assert "corrupt" in str(info.value)


def test_state_dir_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(StateError) as info:
        open_database(blocker / "state")
    assert "cannot create the state directory" in str(info.value)


def test_cli_reports_unusable_state_without_traceback(loop_env: Env) -> None:
    blocker = loop_env.root / "file"
    blocker.write_text("x")
    loop_env.write_config(stateDir=str(blocker / "state"))
    result = loop_env.run("events")
    assert result.exit_code == 1
    assert result.stderr.startswith("error: cannot create the state directory")
    assert "Traceback" not in result.stderr
    (loop_env.state_dir).mkdir(exist_ok=True)
    (loop_env.state_dir / "the-loop.db").write_bytes(b"garbage" * 1000)
    loop_env.write_config()
    corrupt = loop_env.run("events")
    assert corrupt.exit_code == 1 and "corrupt" in corrupt.stderr


def test_read_only_database_file_is_a_clear_error(tmp_path: Path) -> None:
    from the_loop import events as ev

    db = open_database(tmp_path)
    ev.emit(db, "daemon.started", source="test")
    db.close()
    ro = sqlite3.connect(f"file:{tmp_path / 'the-loop.db'}?mode=ro", uri=True)
    with pytest.raises(sqlite3.OperationalError):
        ro.execute("INSERT INTO events (ts, type, level, source) VALUES (1, 'x', 1, 's')")
    ro.close()


def test_transaction_rolls_back_on_error(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    with pytest.raises(RuntimeError), db.transaction() as tx:
        tx.execute("INSERT INTO events (ts, type, level, source) VALUES (1, 'x', 20, 's')")
        raise RuntimeError("boom")
    assert db.connect().execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
