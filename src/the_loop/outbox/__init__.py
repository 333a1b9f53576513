"""Side effects on other systems, queued with the decision that caused them and drained with
retries: the drain, the GitHub write-backs, the Slack renderers and sender.

``OutboxItem`` and ``OutboxStatus`` are the write-backs the drain lists and replays; they load
on first use (the store's outbox module pulls in the connection layer).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.store.outbox import OutboxItem, OutboxStatus

__all__ = [
    "OutboxItem",
    "OutboxStatus",
    "drain",
    "github",
    "notices",
    "slack",
    "slack_notices",
    "slack_sender",
]


def __getattr__(name: str) -> object:
    if name in ("OutboxItem", "OutboxStatus"):
        # lazy: start-up (a command that loads one of the outbox's modules pays for no row)
        from the_loop.store import outbox

        return getattr(outbox, name)
    raise AttributeError(f"module 'the_loop.outbox' has no attribute {name!r}")
