"""The ``/mcp`` door: its route and token guard, and a server loaded when first asked.

The MCP SDK holds about 24 MB once imported. A daemon that nobody asks over MCP should not
carry it idle, so the daemon's app builds its server (``web.mcp``) on the first ``/mcp``
request — the import runs in a worker thread, off the event loop — and runs its session
manager from then until the app stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from the_loop.web import auth

if TYPE_CHECKING:
    from the_loop.web.mcp import McpEndpoint

ACCESS_KEY = "the_loop_access"
"""Where the guard notes on ``request.state`` which token a request came with."""

log = logging.getLogger("the_loop.web.mcp_door")

Handle = Callable[[Scope, Receive, Send], Any]


class LazyMcp:
    """The MCP endpoint BUILD makes, made on the first request while ``open()`` is entered
    (the app's lifespan); ``handle`` is the ASGI app, answering 503 while the door is shut."""

    def __init__(self, build: Callable[[], McpEndpoint]) -> None:
        self._build = build
        self._lock = asyncio.Lock()
        self._endpoint: McpEndpoint | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._open = False

    @contextlib.asynccontextmanager
    async def open(self) -> AsyncIterator[None]:
        self._stop = asyncio.Event()
        self._open = True
        try:
            yield
        finally:
            self._open = False
            self._stop.set()
            task, self._task, self._endpoint = self._task, None, None
            if task is not None:
                try:
                    await task
                except Exception:  # its session manager failed: nothing more to stop
                    log.exception("the MCP session manager ended with an error")

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoint = await self._running()
        if endpoint is None:
            await not_running(scope, receive, send)
            return
        await endpoint.handle(scope, receive, send)

    async def _running(self) -> McpEndpoint | None:
        async with self._lock:
            if self._endpoint is None and self._open:
                endpoint = await asyncio.to_thread(self._build)
                ready = asyncio.Event()
                self._task = asyncio.create_task(self._serve(endpoint, ready))
                await ready.wait()
                self._endpoint = endpoint
            return self._endpoint

    async def _serve(self, endpoint: McpEndpoint, ready: asyncio.Event) -> None:
        try:
            async with endpoint.running():
                ready.set()
                await self._stop.wait()
        finally:
            ready.set()  # a manager that did not start: its endpoint answers 503


async def not_running(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to ``/mcp`` while no MCP session manager runs: 503."""
    body = {"error": {"code": "unavailable", "message": "the MCP server is not running"}}
    await JSONResponse(body, status_code=503)(scope, receive, send)


class _Handover(Response):
    """A response that hands the raw ASGI exchange to APP, which answers it (status, headers,
    streamed body). Lets a FastAPI route, with its dependencies, front an ASGI app."""

    def __init__(self, app: Handle) -> None:
        super().__init__()
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)


def mcp_router(handle: Handle, dependencies: Sequence[Any]) -> APIRouter:
    """``/mcp`` (GET, POST, DELETE) guarded by DEPENDENCIES, answered by HANDLE; not in the
    OpenAPI document."""
    router = APIRouter()

    @router.api_route(
        "/mcp",
        methods=["GET", "POST", "DELETE"],
        dependencies=list(dependencies),
        include_in_schema=False,
    )
    async def mcp_endpoint() -> Response:
        return _Handover(handle)

    return router


def token_guard(get_tokens: Callable[[], auth.Tokens]) -> list[Any]:
    """The dependency for the daemon's ``/mcp``: any valid token (401 otherwise), recording
    on ``request.state`` whether it was the read-only one."""

    def guard(request: Request) -> None:
        setattr(request.state, ACCESS_KEY, auth.check(request, get_tokens(), write=False))

    return [Depends(guard)]
