"""The FastAPI application factory and its lifespan (background work starts and stops here)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from the_loop import __version__
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.health import Health
from the_loop.instance import DaemonInfo
from the_loop.status import health_now
from the_loop.web.api import build_router, metrics_text, token_guards
from the_loop.web.attention_api import attention_router
from the_loop.web.auth import ensure_tokens
from the_loop.web.mcp import McpEndpoint, build_server, mcp_router, token_guard
from the_loop.web.spend_api import spend_router
from the_loop.web.webhooks import github_router

Background = Callable[[Ctx, asyncio.Event], Awaitable[list[asyncio.Task[None]]]]
"""Starts the background work of a daemon; the tasks end when the event is set."""


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def create_app(
    ctx: Ctx, daemon: DaemonInfo | None = None, background: Background | None = None
) -> FastAPI:
    """Build the app serving CTX; DAEMON (a ``DaemonInfo``) when run by the daemon, which
    passes BACKGROUND to run its background work for the app's lifetime."""
    server = ctx.config.server
    mcp = McpEndpoint(build_server(lambda: ctx), server.host, server.public_url)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        tasks = await background(ctx, stop) if background is not None else []
        app.state.stop = stop
        try:
            async with mcp.running():
                yield
        finally:
            stop.set()
            for task in tasks:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                    await asyncio.wait_for(task, timeout=5)

    app = FastAPI(
        title="the-loop",
        version=__version__,
        lifespan=lifespan,
        docs_url="/api/docs",
        redoc_url=None,
        openapi_url="/api/v1/openapi.json",
        redirect_slashes=False,
    )
    app.state.ctx = ctx
    app.state.daemon = daemon
    _install_error_handlers(app)
    if ctx.config.github.enabled and ctx.config.github.webhook.enabled:
        app.include_router(github_router(ctx))

    _mount_api(app, ctx, mcp)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        """Liveness without a token: the process answers HTTP, and nothing else is said."""
        return {"ok": True}

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index() -> str:
        """A placeholder until the dashboard arrives: no token needed, nothing about the state
        is shown, and it says how to authenticate against the API."""
        return _PLACEHOLDER

    return app


def _mount_api(app: FastAPI, ctx: Ctx, mcp: McpEndpoint) -> None:
    tokens = ensure_tokens(ctx)
    read, write = token_guards(lambda: tokens)
    app.include_router(build_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(attention_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(spend_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(mcp_router(mcp, token_guard(lambda: tokens)))

    @app.get("/health", include_in_schema=False, dependencies=read)
    async def root_health() -> Health:
        return await health_now(ctx)

    @app.get("/metrics", include_in_schema=False, dependencies=read)
    async def metrics() -> PlainTextResponse:
        return await asyncio.to_thread(metrics_text, ctx)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(LoopError)
    async def loop_error(_: Request, exc: LoopError) -> JSONResponse:
        return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status)

    @app.exception_handler(sqlite3.Error)
    async def state_error(_: Request, exc: sqlite3.Error) -> JSONResponse:
        return JSONResponse(
            error_body("state_error", f"the state database: {exc}"), status_code=503
        )

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return JSONResponse(error_body("validation_failed", "; ".join(problems)), status_code=422)


_PLACEHOLDER = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>the-loop</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;color:#222}
code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}</style></head>
<body><h1>the-loop</h1>
<p>The daemon is running. The dashboard arrives in a later release; until then use the CLI:</p>
<ul><li><code>the-loop status</code></li><li><code>the-loop events --follow</code></li>
<li><code>the-loop doctor</code></li></ul>
<p>Liveness (no token): <a href="/healthz">/healthz</a>.</p>
<p>Everything under <code>/api/v1</code> needs a token:
<code>Authorization: Bearer &lt;token&gt;</code>, with the token from the environment variable
<code>server.tokenEnv</code> names, else from the file <code>api-token</code> in the state dir
(<code>the-loop start</code> prints where). The API is described at
<code>/api/v1/openapi.json</code>.</p></body></html>
"""
