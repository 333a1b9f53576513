"""The GitHub client's ETag cache kept in the state database (table ``github_etags``).

An ``EtagStore`` (see ``the_loop.github.cache``) that survives restarts, so the first poll after
a restart is conditional too, and that the CLI (``the-loop poll --once``) and the daemon share.
Each statement is its own short autocommit write (``the_loop.store.etags``); a lost or stale
entry only costs one full request, never a wrong answer (GitHub decides 304 from the ETag).
"""

from __future__ import annotations

import time

from the_loop.github.cache import CachedResponse
from the_loop.store import Database, etags
from the_loop.store.etags import EtagEntry

DEFAULT_MAX_AGE_SECONDS = 30 * 86400


class SqliteEtagStore:
    """ETags, bodies and pagination links by request URL, in the-loop's database."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def get(self, key: str) -> CachedResponse | None:
        """The entry stored for KEY, or None."""
        entry = etags.get(self.db, key)
        if entry is None:
            return None
        return CachedResponse(entry.etag, entry.body, entry.link, entry.stored_at)

    def put(self, key: str, entry: CachedResponse) -> None:
        """Store ENTRY for KEY, replacing any earlier one."""
        etags.put(self.db, key, EtagEntry(entry.etag, entry.body, entry.link, entry.stored_at))

    def delete(self, key: str) -> None:
        etags.delete(self.db, key)

    def prune(self, max_age: float = DEFAULT_MAX_AGE_SECONDS, now: float | None = None) -> int:
        """Delete entries stored more than MAX_AGE seconds ago (URLs no longer asked for, such
        as listings with an old ``since``); returns how many went."""
        return etags.delete_before(self.db, (time.time() if now is None else now) - max_age)

    def __len__(self) -> int:
        return etags.count(self.db)
