"""The ``github_etags`` table: the GitHub client's conditional-request cache by request URL.

Each statement is its own short autocommit write; ``the_loop.github.etag_store`` adapts these
functions to the client's ``EtagStore`` protocol.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from the_loop.store.db import Database


@dataclass(frozen=True, slots=True)
class EtagEntry:
    """One cached response: its ETag, body, pagination ``Link`` header and when it was stored."""

    etag: str
    body: bytes
    link: str | None
    stored_at: float


def get(db: Database, key: str) -> EtagEntry | None:
    """The entry stored for KEY, or None."""
    row = (
        db.connect()
        .execute("SELECT etag, body, link, stored_at FROM github_etags WHERE key = ?", (key,))
        .fetchone()
    )
    if row is None:
        return None
    return EtagEntry(etag=row[0], body=bytes(row[1]), link=row[2], stored_at=row[3])


def put(db: Database, key: str, entry: EtagEntry) -> None:
    """Store ENTRY for KEY, replacing any earlier one."""
    db.connect().execute(
        "INSERT INTO github_etags (key, etag, body, link, stored_at) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT (key) DO UPDATE SET etag = excluded.etag, body = excluded.body,"
        " link = excluded.link, stored_at = excluded.stored_at",
        (key, entry.etag, sqlite3.Binary(entry.body), entry.link, entry.stored_at),
    )


def delete(db: Database, key: str) -> None:
    """Forget the entry of KEY (nothing when there is none)."""
    db.connect().execute("DELETE FROM github_etags WHERE key = ?", (key,))


def delete_before(db: Database, cutoff: float) -> int:
    """Delete entries stored before CUTOFF (a Unix time); returns how many went."""
    cursor = db.connect().execute("DELETE FROM github_etags WHERE stored_at < ?", (cutoff,))
    return cursor.rowcount


def count(db: Database) -> int:
    """How many entries are stored."""
    row = db.connect().execute("SELECT COUNT(*) FROM github_etags").fetchone()
    return int(row[0])
