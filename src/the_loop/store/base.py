"""What every state database offers, whichever backend holds it (``store.db`` for SQLite,
``store.pg`` for PostgreSQL)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import AbstractContextManager

from the_loop.store.conn import Connection


class Database(ABC):
    """The state database, whichever backend holds it."""

    kind: str
    """``sqlite`` or ``postgresql``."""
    location: str
    """Where it is, for messages: the file, or the URL without its password."""
    shared = False
    """True when several daemons (nodes) may share it."""

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
