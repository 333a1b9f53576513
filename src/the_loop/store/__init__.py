"""SQLite or PostgreSQL, the only state: one module per table family; nothing else sees SQL.

What the store offers other wings is ``__all__``: the database handle and its table-family
modules (``from the_loop.store import sessions``).
"""

from __future__ import annotations

TYPE_CHECKING = False  # not from typing: `the-loop hook` imports store.attention alone
if TYPE_CHECKING:
    from the_loop.store.db import Database, open_database

__all__ = [
    "Database",
    "attention",
    "conn",
    "db",
    "etags",
    "events",
    "github_state",
    "hook_tokens",
    "inbox",
    "intake_writer",
    "integrity",
    "nodes",
    "open_database",
    "outbox",
    "poll",
    "prompts",
    "rows",
    "sessions",
    "slack",
    "standing",
    "transcripts",
    "usage",
]


def __getattr__(name: str) -> object:
    if name in ("Database", "open_database"):
        # lazy: start-up (`the-loop hook` loads store.attention without the connection layer)
        from the_loop.store import db

        return getattr(db, name)
    raise AttributeError(f"module 'the_loop.store' has no attribute {name!r}")
