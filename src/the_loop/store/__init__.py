"""SQLite, the only state: one database file under ``stateDir``."""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: `the-loop hook` imports store.attention alone
if TYPE_CHECKING:
    from the_loop.store.db import Database, open_database

__all__ = ["Database", "open_database"]


def __getattr__(name: str) -> object:
    if name in __all__:
        # lazy: start-up (`the-loop hook` loads store.attention without the connection layer)
        from the_loop.store import db

        return getattr(db, name)
    raise AttributeError(f"module 'the_loop.store' has no attribute {name!r}")
