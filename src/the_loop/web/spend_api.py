"""``/api/v1`` spend routes: the usage meters, and extending the budget of a work-item session
or a standing session."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Query
from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from the_loop.agent.spend import usage
from the_loop.agent.spend.usage import UsageReport
from the_loop.context import Ctx
from the_loop.standing import service as standing
from the_loop.standing.service import StandingExtended
from the_loop.work_items import spend
from the_loop.work_items.spend import Extended


class ExtendIn(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    usd: float = Field(0.0, ge=0, le=1_000_000, description="Dollars added to the budgets.")
    turns: int = Field(0, ge=0, le=1_000_000, description="Turns added to budgets.maxTurns.")


def spend_router(get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]) -> APIRouter:
    """The spend routes; READ and WRITE are the dependencies guarding each kind."""
    router = APIRouter()

    @router.get("/usage", tags=["spend"], dependencies=read)
    async def get_usage(
        work_item: str | None = Query(None, alias="workItem"),
        days: int = Query(7, ge=1, le=3660),
    ) -> UsageReport:
        """Usage and estimated cost: of one work item (all its sessions) when asked, and of
        the newest days (UTC) with usage."""
        return await asyncio.to_thread(usage.report, get_ctx(), work_item, days)

    @router.post("/sessions/{session_id:path}/extend", tags=["spend"], dependencies=write)
    async def post_extend(session_id: str, body: ExtendIn) -> Extended:
        """Raise a session's budget by usd and/or turns; a session stopped over budget
        resumes its conversation and gets what was kept for it."""
        return await asyncio.to_thread(spend.extend, get_ctx(), session_id, body.usd, body.turns)

    @router.post("/standing/{name}/extend", tags=["spend"], dependencies=write)
    async def post_standing_extend(name: str, body: ExtendIn) -> StandingExtended:
        """Raise a standing session's budget by usd and/or turns; one stopped over budget
        resumes its conversation."""
        return await asyncio.to_thread(standing.extend, get_ctx(), name, body.usd, body.turns)

    return router
