"""What store modules use of a connection: ``execute`` returning a cursor to fetch from.

Both backends satisfy it: ``sqlite3.Connection`` as it is, and the PostgreSQL adapter in
``store.pg``. A store function takes a ``Connection`` (an autocommit one from
``Database.connect()`` for reads, the one ``Database.transaction()`` yields for writes). A
statement that may meet a taken unique key says ``ON CONFLICT DO NOTHING`` and looks at what it
changed, the same on both backends (a PostgreSQL transaction cannot go on after an error).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol


class Cursor(Protocol):
    """The result of one statement."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


class Connection(Protocol):
    """A connection as the store modules use it."""

    def execute(self, sql: str, parameters: Any = ..., /) -> Cursor: ...


class OwnConnection(Connection, Protocol):
    """A connection its opener closes (``the-loop hook``'s)."""

    def close(self) -> None: ...
