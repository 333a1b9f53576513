"""The daemon: serve (the web app, the background tasks, start and stop), and housekeeping."""

from __future__ import annotations

__all__ = [
    "housekeeping",
    "serve",
]
