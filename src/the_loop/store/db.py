"""The database: the embedded SQLite file (the default) or PostgreSQL (``database.url``).

``Database`` is what the store modules and services use; ``SqliteDatabase`` below is the
SQLite one (WAL, busy timeout, named migrations applied at open) and ``store.pg`` holds the
PostgreSQL one. Both apply the same named migrations (``store.migrations``), recorded in
``schema_migrations``.

Every read-modify-write that decides something runs in ``Database.transaction()``, which takes
SQLite's write lock up front (``BEGIN IMMEDIATE``), so two processes can never both win.
Connections are per thread; the CLI and the daemon may write at the same time.

By default a commit that grows the WAL past SQLite's threshold copies it back into the database
file (a checkpoint, with an fsync) before it returns. The daemon calls ``defer_checkpoints`` so
that no commit on its request path pays for that, and runs ``checkpoint`` in the background.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from the_loop.errors import StateError
from the_loop.store.base import Database
from the_loop.store.migrations import MIGRATIONS, apply_pending
from the_loop.store.schema import Schema

__all__ = ["Database", "SqliteDatabase", "open_database"]

DB_NAME = "the-loop.db"
BUSY_TIMEOUT_MS = 30_000
MIN_SQLITE = (3, 35)
"""``RETURNING`` (the store's inserts read the number the database gave)."""


class SqliteDatabase(Database):
    """One SQLite database file; hands out a connection per thread."""

    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.path = path
        self.location = str(path)
        self._wal = f"{path}-wal"
        self._local = threading.local()
        self._writer = threading.RLock()
        self.auto_checkpoint = True

    def connect(self) -> sqlite3.Connection:
        """This thread's connection (autocommit mode; use ``transaction`` to write)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = _connect(self.path)
            if not self.auto_checkpoint:
                conn.execute("PRAGMA wal_autocheckpoint = 0")
            self._local.conn = conn
        return conn

    def defer_checkpoints(self) -> None:
        """Commits stop checkpointing the WAL (connections opened before this call, in other
        threads, keep doing it); the caller must then run ``checkpoint`` regularly."""
        self.auto_checkpoint = False
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.execute("PRAGMA wal_autocheckpoint = 0")

    def checkpoint(self) -> None:
        """Copy committed WAL frames into the database file (``PASSIVE``: never waits for, nor
        blocks, readers and writers)."""
        try:
            self.connect().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.Error as exc:
            raise _state_error(self.path, exc) from None

    def wal_stamp(self) -> tuple[int, int] | None:
        try:
            info = os.stat(self._wal)
        except OSError:
            return (0, 0)  # no WAL (yet): checkpointed when one appears
        return (info.st_size, info.st_mtime_ns)

    def stamps(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None] | None:
        if not self._writer.acquire(blocking=False):
            return None  # a write transaction of this process is open
        try:
            return self.wal_stamp(), self.own_stamp
        finally:
            self._writer.release()

    def sync_commits(self) -> None:
        # this thread's connection only: every other connection keeps NORMAL
        self.connect().execute("PRAGMA synchronous = FULL")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction holding SQLite's write lock from its first statement.

        Threads of one process queue on a lock of their own first: a thread that finds SQLite's
        lock taken would otherwise sleep in SQLite's busy handler (1, 2, 5, 10 ms ...) instead
        of starting as soon as the other thread commits.
        """
        with self._writer:
            yield from self._transaction()

    def _transaction(self) -> Iterator[sqlite3.Connection]:
        conn = self.connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise _state_error(self.path, exc) from None
        # the write lock is held: no other process writes now (and the stamp is needed only
        # for a commit that wakes nobody, so the others make no extra system call)
        before = self.wal_stamp() if self.wakes_nobody() else None
        changes = conn.total_changes
        try:
            yield conn
        except sqlite3.Error as exc:
            _rollback(conn)
            raise _state_error(self.path, exc) from None
        except BaseException:
            _rollback(conn)
            raise
        else:
            try:
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                _rollback(conn)
                raise _state_error(self.path, exc) from None
            if conn.total_changes != changes:
                self.committed(before)

    def close(self) -> None:
        """Close this thread's connection (others close with their threads)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def applied_migrations(self) -> list[str]:
        rows = self.connect().execute(
            "SELECT name FROM schema_migrations ORDER BY applied_at, name"
        )
        return [str(r[0]) for r in rows]


def _rollback(conn: sqlite3.Connection) -> None:
    """Roll back unless SQLite already did (it does on a full disk or an I/O error)."""
    if conn.in_transaction:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


def wal_index_problem(path: Path) -> str | None:
    """Why the WAL index of database PATH (its ``-shm`` file, which every connection maps and
    writes) cannot be written, or None. SQLite given an index it cannot write answers every
    write with a bare "readonly database" or, when the file is made immutable, its mapping
    faults and the process dies on ``SIGBUS`` without a word: checked before a connection opens
    (and by the health checks), it is one clear line instead."""
    shm = path.with_name(path.name + "-shm")
    # Asked with access(2), never by opening the file: closing any descriptor of it would drop
    # every POSIX lock this process's SQLite connections hold on it, and another process could
    # then reset the index under their mapping (the daemon dies on SIGBUS).
    if not os.path.lexists(shm) or os.access(shm, os.R_OK | os.W_OK, follow_symlinks=False):
        return None  # absent: SQLite creates it (in a directory that must be writable)
    return (
        f"the state database's WAL index {shm} cannot be written: make it writable by the "
        "daemon's user again, or remove it while no the-loop process runs"
    )


def file_health(db: Database) -> tuple[list[str], None]:
    """The health check of the SQLite file: what keeps it from being written that no query
    shows yet (its WAL index). Nothing for PostgreSQL."""
    problem = wal_index_problem(db.path) if isinstance(db, SqliteDatabase) else None
    return ([problem] if problem else []), None


def _connect(path: Path) -> sqlite3.Connection:
    problem = wal_index_problem(path)
    if problem is not None:
        raise StateError(problem)
    try:
        conn = sqlite3.connect(
            path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
        )
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        raise _state_error(path, exc) from None
    return conn


def _state_error(path: Path, exc: sqlite3.Error) -> StateError:
    text = str(exc)
    if isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    ):
        return StateError(
            f"the state database {path} is corrupt ({text}); move it aside to start fresh "
            "or restore a backup"
        )
    if "readonly" in text or "read-only" in text or "unable to open" in text:
        return StateError(f"cannot write the state database {path}: {text}")
    if "full" in text:
        return StateError(f"the disk holding {path} is full: {text}")
    return StateError(f"state database {path}: {text}")


def _ensure_state_dir(state_dir: Path) -> None:
    try:
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StateError(f"cannot create the state directory {state_dir}: {exc.strerror}") from None
    if not state_dir.is_dir():
        raise StateError(f"the state directory {state_dir} is not a directory")
    if not os.access(state_dir, os.W_OK | os.X_OK):
        raise StateError(f"the state directory {state_dir} is not writable")


def open_database(state_dir: Path, url: str | None = None, pool_size: int = 16) -> Database:
    """Open (creating if needed) the database and apply pending migrations: the SQLite file in
    STATE_DIR, or the PostgreSQL database at URL (``postgresql://...``).

    Raises ``StateError`` with a clear message for an unwritable directory, a corrupt file or a
    database that cannot be reached.
    """
    _ensure_state_dir(state_dir)
    if url:
        # lazy: psycopg is loaded only by installations that use PostgreSQL
        from the_loop.store.pg import open_postgres

        return open_postgres(url, pool_size)
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise StateError(
            f"the state database needs SQLite {'.'.join(map(str, MIN_SQLITE))} or newer; this"
            f" Python has {sqlite3.sqlite_version}"
        )
    db = SqliteDatabase(state_dir / DB_NAME)
    try:
        _migrate(db)
    except sqlite3.Error as exc:
        raise _state_error(db.path, exc) from None
    return db


def _migrate(db: SqliteDatabase) -> None:
    conn = db.connect()
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations "
        "(name TEXT PRIMARY KEY, applied_at REAL NOT NULL)"
    )
    done = {str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations")}
    if all(name in done for name, _ in MIGRATIONS):
        return
    with db.transaction() as tx:
        done = {str(r[0]) for r in tx.execute("SELECT name FROM schema_migrations")}
        apply_pending(
            Schema("sqlite", tx.execute),
            done,
            lambda name, at: tx.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)", (name, at)
            ),
        )
