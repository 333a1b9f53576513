"""The work-item policy: spawn, deliver, close, pause and queue sessions for GitHub and Slack work
items; their records, workspaces, start and prune.

``SessionRecord`` and ``SessionStatus`` are the records the policy's functions take and return;
they load on first use (the store's session module pulls in the config models).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.store.sessions import SessionRecord, SessionStatus

__all__ = [
    "SessionRecord",
    "SessionStatus",
    "kind",
    "moves",
    "notice",
    "prune",
    "records",
    "service",
    "spend",
    "start",
    "workspace",
]


def __getattr__(name: str) -> object:
    if name in ("SessionRecord", "SessionStatus"):
        # lazy: start-up (a command that loads one of the policy's modules pays for no record)
        from the_loop.store import sessions

        return getattr(sessions, name)
    raise AttributeError(f"module 'the_loop.work_items' has no attribute {name!r}")
