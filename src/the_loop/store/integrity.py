"""The database's own consistency check (``PRAGMA quick_check``): what health and doctor
report as a damaged state database."""

from __future__ import annotations

import sqlite3

from the_loop.store.db import Database

MAX_PROBLEMS = 5


def quick_check(db: Database) -> list[str]:
    """SQLite's ``quick_check`` of DB: empty when the database is whole, else up to
    ``MAX_PROBLEMS`` lines naming what is damaged. A file too damaged to be read at all is a
    problem too, never an exception. Cost: one read of every page (no index cross-check).
    PostgreSQL keeps its own consistency (checksums, WAL): nothing to check from here."""
    if db.kind != "sqlite":
        return []
    try:
        rows = db.connect().execute(f"PRAGMA quick_check({MAX_PROBLEMS})").fetchall()
    except sqlite3.DatabaseError as exc:
        return [str(exc)]
    found = [str(r[0]) for r in rows]
    return [] if found == ["ok"] else found
