"""What every state database offers, whichever backend holds it (``store.db`` for SQLite,
``store.pg`` for PostgreSQL)."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from the_loop.store.conn import Connection


class Database(ABC):
    """The state database, whichever backend holds it."""

    kind: str
    """``sqlite`` or ``postgresql``."""
    location: str
    """Where it is, for messages: the file, or the URL without its password."""
    shared = False
    """True when several daemons (nodes) may share it."""

    def __init__(self) -> None:
        self._listeners: list[Callable[[], None]] = []
        self._unnoticed = threading.local()
        self.own_stamp: tuple[int, int] | None = None
        """``wal_stamp`` after this process's last commit that changed rows (``the_loop.pulse``
        tells another process's writes from its own by it)."""
        self.hid_a_write = False
        """Set when a commit that wakes no listener (``unnoticed``) followed another process's
        write: its ``own_stamp`` covers that write too, so ``the_loop.pulse`` is told here
        (and clears it) instead."""

    def on_commit(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call LISTENER (in the committing thread, after the commit) whenever a transaction of
        this process changed rows; returns what unregisters it. The daemon's passes wake on
        it (``the_loop.pulse``); a listener must be quick and never raise."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    @contextmanager
    def unnoticed(self) -> Iterator[None]:
        """This thread's commits in the block wake no listener (bookkeeping that no pass
        reacts to: a node's heartbeat)."""
        self._unnoticed.on = True
        try:
            yield
        finally:
            self._unnoticed.on = False

    def wakes_nobody(self) -> bool:
        """Whether this thread's commits wake no listener now (``unnoticed``)."""
        return bool(getattr(self._unnoticed, "on", False))

    def committed(self, before: tuple[int, int] | None = None) -> None:
        """Tell the listeners that a transaction changed rows (called by the backends; BEFORE:
        ``wal_stamp`` as a commit that wakes nobody took the write lock, when the backend has
        one: only such a commit can hide another process's write)."""
        followed = before is not None and before != self.own_stamp  # another process wrote
        self.own_stamp = self.wal_stamp()
        if self.wakes_nobody():
            self.hid_a_write = self.hid_a_write or followed
            return
        for listener in list(self._listeners):
            listener()

    @abstractmethod
    def connect(self) -> Connection:
        """An autocommit connection for reads (use ``transaction`` to write)."""

    @abstractmethod
    def transaction(self) -> AbstractContextManager[Connection]:
        """A write transaction: serialized with every other write transaction (SQLite's
        ``BEGIN IMMEDIATE``); committed at the end of the block, rolled back on an error.
        Database errors leave it as ``StateError``."""

    @abstractmethod
    def close(self) -> None:
        """Release this thread's connection (SQLite) or the pool (PostgreSQL)."""

    @abstractmethod
    def applied_migrations(self) -> list[str]: ...

    def defer_checkpoints(self) -> None:
        """SQLite: commits stop checkpointing the WAL (see ``SqliteDatabase``)."""
        return None

    def checkpoint(self) -> None:
        """SQLite: copy committed WAL frames into the database file."""
        return None

    def wal_stamp(self) -> tuple[int, int] | None:
        """SQLite: the WAL file's size and modification time (they change with every commit,
        of any process); None when there is nothing to checkpoint, ever."""
        return None

    def stamps(self) -> tuple[tuple[int, int] | None, tuple[int, int] | None] | None:
        """``wal_stamp`` and ``own_stamp`` read together while no commit of this process is
        under way; None while one is (its WAL written, its ``own_stamp`` not yet: it would
        look like another process's write)."""
        return self.wal_stamp(), self.own_stamp

    def sync_commits(self) -> None:
        """This thread's commits are power-loss durable from now on (the intake writer)."""
        return None

    def claim_transaction(self) -> AbstractContextManager[Connection]:
        """The transaction of an inbox claim (PostgreSQL: without the write lock, the claim
        selecting ``FOR UPDATE SKIP LOCKED``)."""
        return self.transaction()

    def item_lock(self, key: str) -> AbstractContextManager[None] | None:
        """A lock on KEY held in the database (shared databases), or None: the caller then
        uses its host-local lock."""
        return None

    def claim_daemon(self, node: str, lease_seconds: float | None = None) -> None:
        """Make this process the one daemon of node NODE on this database, or raise
        ``AlreadyRunning`` (SQLite: the state dir's lock already does it); with LEASE_SECONDS
        (shared databases), the database locks it holds expire when it stops running that
        long."""
        return None
