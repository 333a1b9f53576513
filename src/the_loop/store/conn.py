"""What store modules use of a connection: ``execute`` returning a cursor to fetch from.

Both backends satisfy it: ``sqlite3.Connection`` as it is, and the PostgreSQL adapter in
``store.pg``. A store function takes a ``Connection`` (an autocommit one from
``Database.connect()`` for reads, the one ``Database.transaction()`` yields for writes) and
catches ``conn.IntegrityError`` for a constraint it relies on.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int: ...

    @property
    def lastrowid(self) -> int | None: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection as the store modules use it."""

    @property
    def IntegrityError(self) -> type[Exception]: ...

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...


class OwnConnection(Connection, Protocol):
    """A connection its opener closes (``the-loop hook``'s)."""

    def close(self) -> None: ...
