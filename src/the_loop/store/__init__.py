"""SQLite, the only state: one database file under ``stateDir``."""

from __future__ import annotations

from the_loop.store.db import Database, open_database

__all__ = ["Database", "open_database"]
