"""Work arriving: the durable inbox, its worker lanes and replay, and the sources that feed it
(the webhook's dispatch, the GitHub poller, Slack) — all handed to ``engine.decide`` as work events.

``InboxItem`` and ``InboxStatus`` are the inbox rows its operator verbs list and replay; they
load on first use (the store's inbox module pulls in the connection layer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.store.inbox import InboxItem, InboxStatus

__all__ = [
    "InboxItem",
    "InboxStatus",
    "dispatch",
    "github_poller",
    "ops",
    "slack",
    "worker",
]


def __getattr__(name: str) -> object:
    if name in ("InboxItem", "InboxStatus"):
        # lazy: start-up (a command that loads one of intake's modules pays for no inbox row)
        from the_loop.store import inbox

        return getattr(inbox, name)
    raise AttributeError(f"module 'the_loop.intake' has no attribute {name!r}")
