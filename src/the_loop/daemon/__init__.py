"""The daemon: serve (the web app, the background tasks, start and stop), housekeeping, and the
wiring that registers each kind of session with the agent layer.
"""

from __future__ import annotations

__all__ = [
    "held_release",
    "housekeeping",
    "serve",
]
