"""The node-to-node API (decision 0035): what another node of the cluster may ask this one.

Authenticated only by the cluster token (``node.clusterTokenEnv``), compared in constant time
before anything is read: no token, a wrong one, an API token, or no cluster token configured
on this node → 401 and nothing happens. The API tokens' guards never accept the cluster token.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from fastapi import APIRouter, Depends, Query, Request

from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import Unauthorized
from the_loop.views import sessions as views
from the_loop.views.sessions import Screen
from the_loop.web.auth import equal, presented


def cluster_router(get_ctx: Callable[[], Ctx]) -> APIRouter:
    """The ``/cluster`` routes; the token is read once, when the app is built."""
    token = nodes.cluster_token(get_ctx())

    async def guard(request: Request) -> None:
        if token is None:
            raise Unauthorized("this node takes no node-to-node requests (node.clusterTokenEnv)")
        given = presented(request)
        if given is None:
            raise Unauthorized("missing cluster token (Authorization: Bearer <cluster token>)")
        if not equal(given, token):
            raise Unauthorized("invalid cluster token")

    router = APIRouter(dependencies=[Depends(guard)])

    @router.get("/cluster/sessions/{session_id:path}/screen", include_in_schema=False)
    async def cluster_screen(session_id: str, lines: int = Query(200, ge=1, le=100_000)) -> Screen:
        """For another node: the screen of a session this node runs (never relayed on)."""
        return await asyncio.to_thread(
            views.session_screen, get_ctx(), session_id, lines, relay=False
        )

    return router
