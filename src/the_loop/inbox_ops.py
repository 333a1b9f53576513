"""Operator verbs on the durable inbox: replay a delivery.

``replay`` makes an item ready again; when no daemon serves the state dir it is processed at
once, in this process, through the same path a live delivery takes (``dispatch.process``).
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from the_loop import dispatch
from the_loop.context import Ctx
from the_loop.daemon import daemon_running
from the_loop.errors import NotFound
from the_loop.store import inbox


class ReplayOutcome(StrEnum):
    daemon = "daemon"
    """Ready again; the running daemon will process it."""
    ready = "ready"
    """Ready again; someone else claimed it first."""
    processed = "processed"
    """Processed here; ``status``, ``summary`` and ``error`` say how it went."""


class Replayed(BaseModel):
    """What ``replay`` did with one delivery."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

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
    claimed = inbox.claim(ctx.db, delivery_id)
    if claimed is None:
        return Replayed(delivery_id=delivery_id, outcome=ReplayOutcome.ready)
    result = dispatch.process(ctx, *claimed)
    return Replayed(
        delivery_id=delivery_id,
        outcome=ReplayOutcome.processed,
        status=result.status,
        summary=result.summary,
        error=result.error,
    )
