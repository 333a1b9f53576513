"""The durable inbox for operators: the newest items, and replay.

``replay`` makes an item ready again; when no daemon serves the state dir it is processed at
once, in this process, through the same path a live delivery takes (``dispatch.process``).
"""

from __future__ import annotations

from enum import StrEnum

from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import NotFound
from the_loop.instance import daemon_running
from the_loop.intake import dispatch
from the_loop.store import inbox
from the_loop.store.inbox import InboxItem, InboxStatus
from the_loop.wire import Wire


def inbox_items(ctx: Ctx, status: InboxStatus | None = None, limit: int = 100) -> list[InboxItem]:
    """The LIMIT newest items (of STATUS, when given): what ``GET /api/v1/inbox`` and ``the-loop
    inbox list --format json`` answer. The counts by status are in the status report."""
    return inbox.list_items(ctx.db, status, limit)


class ReplayOutcome(StrEnum):
    daemon = "daemon"
    """Ready again; the running daemon will process it."""
    ready = "ready"
    """Ready again; someone else claimed it first."""
    processed = "processed"
    """Processed here; ``status``, ``summary`` and ``error`` say how it went."""


class Replayed(Wire):
    """What ``replay`` did with one delivery."""

    delivery_id: str
    outcome: ReplayOutcome
    status: str | None = None
    summary: str = ""
    error: str | None = None


def replay(ctx: Ctx, delivery_id: str) -> Replayed:
    """Make DELIVERY_ID ready again (a failed or dead-lettered one, or any other on purpose)
    and, unless a daemon runs, process it now; ``NotFound`` for an unknown id."""
    if inbox.replay(ctx.db, delivery_id) is None:
        raise NotFound(f"no inbox item {delivery_id!r}")
    if daemon_running(ctx.state_dir):
        return Replayed(delivery_id=delivery_id, outcome=ReplayOutcome.daemon)
    claimed = inbox.claim(ctx.db, delivery_id, nodes.node_name(ctx))
    if claimed is None:
        return Replayed(delivery_id=delivery_id, outcome=ReplayOutcome.ready)
    result = dispatch.process(ctx, claimed)
    return Replayed(
        delivery_id=delivery_id,
        outcome=ReplayOutcome.processed,
        status=result.status,
        summary=result.summary,
        error=result.error,
    )
