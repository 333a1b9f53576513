"""The GitHub client's ETag cache kept in the state database (table ``github_etags``).

An ``EtagStore`` (see ``the_loop.github.cache``) that survives restarts, so the first poll after
a restart is conditional too, and that the CLI (``the-loop poll --once``) and the daemon share.
Each statement is its own short autocommit write; a lost or stale entry only costs one full
request, never a wrong answer (GitHub decides 304 from the ETag).
"""

from __future__ import annotations

import sqlite3
import time

from the_loop.github.cache import CachedResponse
from the_loop.store import Database

DEFAULT_MAX_AGE_SECONDS = 30 * 86400


class SqliteEtagStore:
    """ETags, bodies and pagination links by request URL, in the-loop's database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, key: str) -> CachedResponse | None:
        """The entry stored for KEY, or None."""
        row = (
            self.db.connect()
            .execute("SELECT etag, body, link, stored_at FROM github_etags WHERE key = ?", (key,))
            .fetchone()
        )
        if row is None:
            return None
        return CachedResponse(etag=row[0], body=bytes(row[1]), link=row[2], stored_at=row[3])

    def put(self, key: str, entry: CachedResponse) -> None:
        """Store ENTRY for KEY, replacing any earlier one."""
        self.db.connect().execute(
            "INSERT INTO github_etags (key, etag, body, link, stored_at) VALUES (?, ?, ?, ?, ?)"
            " ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, body = excluded.body,"
            " link = excluded.link, stored_at = excluded.stored_at",
            (key, entry.etag, sqlite3.Binary(entry.body), entry.link, entry.stored_at),
        )

    def delete(self, key: str) -> None:
        self.db.connect().execute("DELETE FROM github_etags WHERE key = ?", (key,))

    def prune(self, max_age: float = DEFAULT_MAX_AGE_SECONDS, now: float | None = None) -> int:
        """Delete entries stored more than MAX_AGE seconds ago (URLs no longer asked for, such
        as listings with an old ``since``); returns how many went."""
        cutoff = (time.time() if now is None else now) - max_age
        cursor = self.db.connect().execute(
            "DELETE FROM github_etags WHERE stored_at < ?", (cutoff,)
        )
        return cursor.rowcount

    def __len__(self) -> int:
        row = self.db.connect().execute("SELECT COUNT(*) FROM github_etags").fetchone()
        return int(row[0])
