"""``/api/v1`` conversation routes: an agent's conversation read from its transcript (the
session page's Conversation tab polls them)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter

from the_loop.context import Ctx
from the_loop.views import conversation as conversation_view
from the_loop.views.conversation import Conversation


def conversation_router(get_ctx: Callable[[], Ctx], read: list[Any]) -> APIRouter:
    """The conversation routes, guarded by READ. Included before the routes whose
    ``{session_id:path}`` would take the ``/conversation`` suffix as part of an id."""
    router = APIRouter()

    @router.get("/sessions/{session_id:path}/conversation", tags=["sessions"], dependencies=read)
    async def get_conversation(session_id: str) -> Conversation:
        """The session's conversation from its agent's transcript: turns of a prompt, the
        agent's messages and its tool calls with their input and result."""
        ctx = get_ctx()
        return await asyncio.to_thread(conversation_view.session_conversation, ctx, session_id)

    @router.get("/standing/{name}/conversation", tags=["standing"], dependencies=read)
    async def get_standing_conversation(name: str) -> Conversation:
        """A standing session's conversation from its agent's transcript."""
        ctx = get_ctx()
        return await asyncio.to_thread(conversation_view.standing_conversation, ctx, name)

    return router
