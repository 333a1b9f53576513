"""The PostgreSQL backend (``database.url: postgresql://...``): psycopg 3 with a connection pool.

The store's statements are written once, in SQL both backends run, with SQLite's ``?``
placeholders (``placeholders`` makes them psycopg's ``%s``, the one translation); where the
backends differ, the migrations (``store.migrations``) write each one's DDL. The semantics are
kept as they are on SQLite:

- Every write transaction first takes one cluster-wide advisory lock (``WRITE_LOCK``, held to
  its commit): write transactions run one at a time, as under SQLite's ``BEGIN IMMEDIATE``, so
  a read-modify-write that decides something (one live session per item, dedupe of a
  delivery) cannot be won twice, whichever node runs it. Reads never wait for it.
- The inbox claim does not take it: it selects ``FOR UPDATE SKIP LOCKED`` (``claim_transaction``),
  so claims on several nodes never wait for each other nor take one item twice.
- Commits are durable (``synchronous_commit = on`` on every connection): the daemon
  acknowledges a delivery only after its commit returned; concurrent commits share WAL
  flushes (PostgreSQL's own group commit).
- Per-item serialization (``item_lock``) is a transaction-level advisory lock on a key's
  hash, held in a transaction of a pooled connection for the duration of the block, so two
  nodes never process one work item at once.
- A daemon's locks are leases (``claim_daemon``): a transaction left idle longer than
  ``node.deadAfterSeconds`` is ended by the server, so a paused node cannot hold the write
  lock or an item lock for ever; while the process runs, item-lock transactions are touched.

Database errors leave the backend as ``StateError`` with the URL's password removed (a store
function that expects a unique key to be taken says ``ON CONFLICT DO NOTHING`` and looks at
what it changed).
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import psycopg.adapt
import psycopg.errors
import psycopg_pool
from psycopg.pq import Format

from the_loop.errors import AlreadyRunning, StateError
from the_loop.store.base import Database
from the_loop.store.conn import Connection
from the_loop.store.migrations import MIGRATIONS, apply_pending
from the_loop.store.schema import Schema

WRITE_LOCK = "SELECT pg_advisory_xact_lock(32272, 1)"
"""Take the two-key advisory lock every write transaction holds (the one-key space, used by
``item_lock``, never overlaps the two-key one)."""
MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(32272, 2)"
NODE_LOCK = "SELECT pg_try_advisory_lock(32273, hashtext(%s))"
"""One daemon per node name (its own key space: ``item_lock`` uses the one-key form)."""
POOL_SIZE = 16
LOCK_TIMEOUT_MS = 30_000
CONNECT_TIMEOUT = 10.0
LOCK_WAIT_SECONDS = 3600.0
"""How long an item lock waits for a connection of its own (the lock itself waits as long as
its holder holds it, as the file lock on SQLite does)."""
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def _thread_lock(key: str) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        lock = _THREAD_LOCKS.get(key)
        if lock is None:
            lock = _THREAD_LOCKS[key] = threading.Lock()
        return lock


def redact(url: str) -> str:
    """URL without its password (for messages and status)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://(unparsable url)"
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    netloc = f"{parts.username or ''}:***@{host}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


class _BoolAsInt(psycopg.adapt.Dumper):
    """Python booleans as integers: the schema keeps SQLite's 0/1 flags in BIGINT columns."""

    oid = 20  # int8
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return b"1" if obj else b"0"


class _IntAsInt8(psycopg.adapt.Dumper):
    """Every Python int as int8 (psycopg would pick int2 for small ones, which PostgreSQL
    then refuses to compare with a BIGINT's neighbours in some expressions)."""

    oid = 20
    format = Format.TEXT

    def dump(self, obj: Any) -> bytes:
        return str(int(obj)).encode()


def _configure(conn: psycopg.Connection[Any]) -> None:
    conn.adapters.register_dumper(bool, _BoolAsInt)
    conn.adapters.register_dumper(int, _IntAsInt8)
    conn.execute("SET synchronous_commit TO on")


class Result:
    """A statement's rows (fetched at once) and ``rowcount``."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list[Any], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def fetchone(self) -> Any:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[Any]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


_LITERALS = re.compile(r"('(?:[^']|'')*')")


@cache
def placeholders(sql: str) -> str:
    """SQL with SQLite's ``?`` placeholders as psycopg's ``%s`` (and a literal ``%`` as
    ``%%``), outside quoted literals."""
    pieces = _LITERALS.split(sql)
    for i, piece in enumerate(pieces):
        piece = piece.replace("%", "%%")
        pieces[i] = piece if i % 2 else piece.replace("?", "%s")
    return "".join(pieces)


def _run(conn: psycopg.Connection[Any], sql: str, parameters: Any) -> Result:
    args: Sequence[Any] = () if parameters is None else parameters
    cur = conn.execute(placeholders(sql), args)
    return Result(cur.fetchall() if cur.description is not None else [], cur.rowcount)


class _InTransaction:
    """The connection ``transaction()`` yields (a ``store.conn.Connection``)."""

    __slots__ = ("_conn", "wrote")

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self._conn = conn
        self.wrote = False
        """Whether a statement changed rows (``Database.committed`` after the commit)."""

    def execute(self, sql: str, parameters: Any = None, /) -> Result:
        result = _run(self._conn, sql, parameters)
        if result.rowcount > 0 and not sql.lstrip()[:6].upper().startswith("SELECT"):
            self.wrote = True
        return result


class _Autocommit:
    """``connect()``'s connection: each statement on a pooled connection, committed alone."""

    __slots__ = ("_db",)

    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def execute(self, sql: str, parameters: Any = None, /) -> Result:
        try:
            with self._db.pool.connection() as conn:
                return _run(conn, sql, parameters)
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise state_error(self._db.location, exc) from None


class PgDatabase(Database):
    """A PostgreSQL database several nodes may share (see the module docstring)."""

    kind = "postgresql"
    shared = True

    def __init__(
        self, url: str, pool_size: int = POOL_SIZE, lock_timeout_ms: int = LOCK_TIMEOUT_MS
    ) -> None:
        super().__init__()
        self.url = url
        self.location = redact(url)
        self._pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._lock_pool: psycopg_pool.ConnectionPool[Any] | None = None
        self._daemon_conn: psycopg.Connection[Any] | None = None
        self._pool_size = pool_size
        self._lock_timeout_ms = lock_timeout_ms
        self._guard = threading.Lock()
        self._lease_ms: int | None = None
        self._held: set[psycopg.Connection[Any]] = set()

    @property
    def pool(self) -> psycopg_pool.ConnectionPool[Any]:
        with self._guard:
            if self._pool is None:
                self._pool = psycopg_pool.ConnectionPool(
                    self.url,
                    min_size=1,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT)},
                    configure=self._configure_statements,
                    # a connection the server dropped (a restart, a terminated backend) is
                    # replaced when it is taken, instead of failing the caller's statement
                    check=psycopg_pool.ConnectionPool.check_connection,
                    timeout=CONNECT_TIMEOUT,
                    open=True,
                    name="the-loop",
                )
                # closed with this object, in the thread that drops it: left to the pool's
                # own __del__, the close could run in (and fail to join) a pool worker
                weakref.finalize(self, self._pool.close)
            return self._pool

    def connect(self) -> Connection:
        return _Autocommit(self)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        with self._transaction(WRITE_LOCK) as tx:
            yield tx

    @contextmanager
    def claim_transaction(self) -> Iterator[Connection]:
        """A transaction without the write lock, for ``SELECT ... FOR UPDATE SKIP LOCKED``
        claims (row locks serialize them instead)."""
        with self._transaction(None) as tx:
            yield tx

    @contextmanager
    def _transaction(self, lock: str | None) -> Iterator[Connection]:
        tx: _InTransaction | None = None
        try:
            with self.pool.connection() as conn, conn.transaction():
                if lock is not None:
                    conn.execute(lock)
                tx = _InTransaction(conn)
                yield tx
        except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
            raise state_error(self.location, exc) from None
        if tx is not None and tx.wrote:
            self.committed()

    def _configure_statements(self, conn: psycopg.Connection[Any]) -> None:
        """Statement connections wait at most ``lock_timeout_ms`` for a lock (the write lock
        included), then fail as "locked", like SQLite's busy timeout; item-lock connections
        wait as long as the holder holds the item."""
        _configure(conn)
        conn.execute(f"SET lock_timeout = {int(self._lock_timeout_ms)}")
        if self._lease_ms is not None:
            # a transaction left open that long is a paused or hung node's: the server ends
            # it, and the locks it holds (the write lock, claimed rows) go with it
            conn.execute(f"SET idle_in_transaction_session_timeout = {self._lease_ms}")

    def _configure_locks(self, conn: psycopg.Connection[Any]) -> None:
        """A daemon's item lock is held in a transaction the server ends when it stays idle
        longer than the lease: ``_keep_held`` touches it while this process runs, so only a
        paused or hung node's locks expire."""
        _configure(conn)
        if self._lease_ms is not None:
            conn.execute(f"SET idle_in_transaction_session_timeout = {self._lease_ms}")

    @property
    def lock_pool(self) -> psycopg_pool.ConnectionPool[Any]:
        """The connections item locks are held on: a pool of their own, so that holders
        waiting for a lock can never take every connection a lock holder's transactions
        need."""
        with self._guard:
            if self._lock_pool is None:
                self._lock_pool = psycopg_pool.ConnectionPool(
                    self.url,
                    min_size=0,
                    max_size=self._pool_size,
                    kwargs={"autocommit": True, "connect_timeout": int(CONNECT_TIMEOUT)},
                    configure=self._configure_locks,
                    check=psycopg_pool.ConnectionPool.check_connection,
                    timeout=LOCK_WAIT_SECONDS,
                    open=True,
                    name="the-loop-locks",
                )
                weakref.finalize(self, self._lock_pool.close)
            return self._lock_pool

    @contextmanager
    def item_lock(self, key: str) -> Iterator[None]:
        # the threads of this process queue on a lock of their own first: one connection
        # per key waits in PostgreSQL, whatever the number of threads
        with _thread_lock(key):
            try:
                with self.lock_pool.connection() as conn, conn.transaction():
                    # transaction-scoped: a holder paused past its lease loses it (see
                    # ``claim_daemon``), and its connection returns to the pool unlocked
                    conn.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (key,))
                    with self._guard:
                        self._held.add(conn)
                    try:
                        yield
                    finally:
                        with self._guard:
                            self._held.discard(conn)
            except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
                raise state_error(self.location, exc) from None

    def claim_daemon(self, node: str, lease_seconds: float | None = None) -> None:
        """An advisory lock on NODE's name, held on a connection of its own for the life of
        the process (a killed daemon's connection closes, which frees it): two daemons with
        one node name would each take the other's claims and sessions for their own.

        With LEASE_SECONDS, the locks this process holds expire when it stops running for
        that long (paused, hung): a transaction idle that long is ended by the server, and
        item locks are held in transactions ended when idle that long, kept busy meanwhile."""
        if lease_seconds is not None:
            self._start_lease(lease_seconds)
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=10)
            row = conn.execute(NODE_LOCK, (node,)).fetchone()
        except psycopg.Error as exc:
            raise state_error(self.location, exc) from None
        if row is None or not row[0]:
            conn.close()
            raise AlreadyRunning(
                f"another the-loop daemon already runs as node {node!r} on the state database "
                f"{self.location}; stop it with `the-loop stop` on its host, or give this one "
                "another `node.name` (docs/scaling.md)"
            )
        self._daemon_conn = conn

    def _start_lease(self, seconds: float) -> None:
        self.close()  # connections opened before (start-up reads) have no lease
        self._lease_ms = max(1000, int(seconds * 1000))
        threading.Thread(target=self._keep_held, name="the-loop-item-locks", daemon=True).start()

    def _keep_held(self) -> None:
        """Keep the transactions holding item locks from looking idle while this process runs
        (``idle_in_transaction_session_timeout``); each is touched several times per lease."""
        interval = (self._lease_ms or 1000) / 4000
        while True:
            time.sleep(interval)
            with self._guard:
                held = list(self._held)
            for conn in held:
                try:
                    conn.execute("SELECT 1")
                except psycopg.Error:
                    continue  # its holder finds out on its next statement

    def close(self) -> None:
        with self._guard:
            pools = [p for p in (self._pool, self._lock_pool) if p is not None]
            self._pool = self._lock_pool = None
        for pool in pools:
            pool.close()

    def applied_migrations(self) -> list[str]:
        rows = self.connect().execute(
            "SELECT name FROM schema_migrations ORDER BY applied_at, name"
        )
        return [str(r[0]) for r in rows]


def state_error(location: str, exc: BaseException) -> StateError:
    """EXC as the clear ``StateError`` the surfaces show (never the password)."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg_pool.PoolTimeout | psycopg.OperationalError) and not isinstance(
        exc, psycopg.errors.DiskFull | psycopg.errors.LockNotAvailable
    ):
        return StateError(f"cannot reach the state database {location}: {text}")
    if isinstance(
        exc, psycopg.errors.ReadOnlySqlTransaction | psycopg.errors.InsufficientPrivilege
    ):
        return StateError(f"cannot write the state database {location}: {text}")
    if isinstance(exc, psycopg.errors.DiskFull):
        return StateError(f"the disk holding the state database {location} is full: {text}")
    if isinstance(exc, psycopg.errors.LockNotAvailable | psycopg.errors.DeadlockDetected):
        return StateError(f"the state database {location} is locked: {text}")
    return StateError(f"state database {location}: {text}")


def open_postgres(
    url: str, pool_size: int = POOL_SIZE, lock_timeout_ms: int = LOCK_TIMEOUT_MS
) -> PgDatabase:
    """Connect to URL and apply pending migrations (one node at a time)."""
    db = PgDatabase(url, pool_size, lock_timeout_ms)
    try:
        # a connection of its own, not the pool's: an unreachable server is reported at once,
        # with libpq's reason, instead of after the pool's timeout
        with psycopg.connect(url, autocommit=True, connect_timeout=int(CONNECT_TIMEOUT)) as conn:
            _configure(conn)
            _migrate(conn)
    except psycopg.Error as exc:
        raise state_error(db.location, exc) from None
    return db


def _up_to_date(conn: psycopg.Connection[Any]) -> bool:
    """Whether every migration is applied already: then opening only reads (a read-only
    replica or role can open the database)."""
    found = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
    if found is None or not found[0]:
        return False
    done = {str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations")}
    return all(name in done for name, _ in MIGRATIONS)


def _migrate(conn: psycopg.Connection[Any]) -> None:
    if _up_to_date(conn):
        return
    with conn.transaction():
        conn.execute(MIGRATION_LOCK)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations "
            "(name TEXT PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)"
        )
        done = {str(r[0]) for r in conn.execute("SELECT name FROM schema_migrations")}
        apply_pending(
            Schema("postgresql", lambda sql: conn.execute(sql.encode())),
            done,
            lambda name, at: conn.execute(
                "INSERT INTO schema_migrations (name, applied_at) VALUES (%s, %s)", (name, at)
            ),
        )
