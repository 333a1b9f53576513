"""``/api/v1`` operator routes on the inbox and the outbox: replay a delivery, list and replay
write-backs (what ``the-loop inbox replay`` and ``the-loop outbox …`` do from the terminal)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query

from the_loop.context import Ctx
from the_loop.intake import ops as inbox_ops
from the_loop.intake.ops import Replayed
from the_loop.outbox import OutboxItem, OutboxStatus
from the_loop.outbox import drain as outbox


def ops_router(get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]) -> APIRouter:
    """The inbox and outbox operator routes; READ and WRITE guard each kind."""
    router = APIRouter()

    @router.post("/inbox/{delivery_id}/replay", tags=["inbox"], dependencies=write)
    async def replay_delivery(delivery_id: str) -> Replayed:
        """Make a delivery ready again (a failed or dead-lettered one, or any other on
        purpose); the running daemon processes it."""
        ctx = get_ctx()
        done = await asyncio.to_thread(inbox_ops.replay, ctx, delivery_id)
        ctx.inbox_wake.set()  # the worker on this event loop picks it up now
        return done

    @router.get("/outbox", tags=["outbox"], dependencies=read)
    async def list_outbox(
        status: OutboxStatus | None = None, limit: int = Query(100, ge=1, le=10_000)
    ) -> list[OutboxItem]:
        """Write-backs (reactions, comments), newest first."""
        return await asyncio.to_thread(outbox.list_items, get_ctx(), status, limit)

    @router.post("/outbox/{item_id}/replay", tags=["outbox"], dependencies=write)
    async def replay_outbox(item_id: int) -> OutboxItem:
        """Make a write-back due now (a failed one, or one waiting for its next try)."""
        return await asyncio.to_thread(outbox.replay, get_ctx(), item_id)

    return router
