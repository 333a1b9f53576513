"""Named schema migrations, applied in order once each and recorded in ``schema_migrations``.

Append only: a released migration is never edited, a change is a new named entry.
"""

from __future__ import annotations

MIGRATIONS: list[tuple[str, str]] = [
    (
        "0001_events",
        """
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            ts REAL NOT NULL,
            type TEXT NOT NULL,
            level INTEGER NOT NULL,
            source TEXT NOT NULL,
            work_item TEXT,
            standing TEXT,
            session_id TEXT,
            delivery_id TEXT,
            payload TEXT NOT NULL DEFAULT '{}'
        );
        CREATE INDEX events_ts ON events (ts);
        CREATE INDEX events_type ON events (type, id);
        CREATE INDEX events_work_item ON events (work_item, id) WHERE work_item IS NOT NULL;
        CREATE INDEX events_standing ON events (standing, id) WHERE standing IS NOT NULL;
        """,
    ),
]
