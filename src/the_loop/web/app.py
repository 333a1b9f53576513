"""The FastAPI application factory and its lifespan (background work starts and stops here)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from the_loop import __version__
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.instance import DaemonInfo
from the_loop.views.health import Health
from the_loop.views.status import health_now
from the_loop.web import dashboard_auth
from the_loop.web.api import build_router, metrics_text, token_guards
from the_loop.web.assets import Assets
from the_loop.web.attention_api import attention_router
from the_loop.web.auth import Tokens, ensure_tokens
from the_loop.web.cluster_api import cluster_router
from the_loop.web.conversation_api import conversation_router
from the_loop.web.direct import DirectRoutes, post_endpoints
from the_loop.web.front_door import FrontDoor
from the_loop.web.mcp_door import LazyMcp, mcp_router, token_guard
from the_loop.web.ops_api import ops_router
from the_loop.web.pages import dashboard_router
from the_loop.web.render import Pages
from the_loop.web.slack_webhooks import slack_router
from the_loop.web.spend_api import spend_router
from the_loop.web.terminal import terminal_router
from the_loop.web.terminal_bridge import Bridge
from the_loop.web.webhooks import github_router

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

    from the_loop.web.mcp import McpEndpoint

NO_TELEMETRY: TelemetryConfig = {
    "tracing": False,
    "metrics": False,
    "logs": False,
    "auto_configure": False,
}
"""FastAPI's OpenTelemetry instrumentation, off: the-loop exports no traces, and a variable
in the daemon's environment (``FASTAPI_OTEL_AUTO_CONFIGURE``) must not start sending request
details somewhere. Off, it also stops asking for its providers on every request."""

Background = Callable[[Ctx, asyncio.Event], Awaitable[list[asyncio.Task[None]]]]
"""Starts the background work of a daemon; the tasks end when the event is set."""


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message}}


def _mcp_endpoint(ctx: Ctx) -> McpEndpoint:
    """The daemon's MCP server (imports the MCP SDK: called on the first ``/mcp`` request)."""
    # lazy: the MCP SDK holds about 24 MB, loaded only once someone asks over MCP
    from the_loop.web.mcp import McpEndpoint, build_server

    server = ctx.config.server
    return McpEndpoint(build_server(lambda: ctx), server.host, server.public_url)


def create_app(
    ctx: Ctx, daemon: DaemonInfo | None = None, background: Background | None = None
) -> FastAPI:
    """Build the app serving CTX; DAEMON (a ``DaemonInfo``) when run by the daemon, which
    passes BACKGROUND to run its background work for the app's lifetime."""
    server = ctx.config.server
    mcp = LazyMcp(lambda: _mcp_endpoint(ctx))

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stop = asyncio.Event()
        tasks = await background(ctx, stop) if background is not None else []
        app.state.stop = stop
        try:
            async with mcp.open():
                yield
        finally:
            stop.set()
            ctx.stopping.set()  # threads waiting on an agent give up
            await Bridge.close_all()  # browser terminals still open: their tmux clients end
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
        telemetry=NO_TELEMETRY,
    )
    app.state.ctx = ctx
    app.state.daemon = daemon
    _install_error_handlers(app)
    github = ctx.config.github.enabled and ctx.config.github.webhook.enabled
    intake = [github_router(ctx)] if github else []
    intake.append(slack_router(ctx))  # answers 404 while slack.enabled is off
    for router in intake:
        app.include_router(router)
    # the intake routes are served without FastAPI's routing (decision 0037)
    app.add_middleware(
        DirectRoutes,
        routes=post_endpoints(intake),
        handled=(LoopError, sqlite3.Error),
        on_error=error_response,
    )

    tokens = _mount_api(app, ctx, mcp)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, bool]:
        """Liveness without a token: the process answers HTTP, and nothing else is said."""
        return {"ok": True}

    _mount_dashboard(app, ctx)
    # outermost: the token is checked, and the body bounded, before anything reads it
    app.add_middleware(FrontDoor, get_tokens=lambda: tokens, limits=server.limits)

    return app


def _mount_api(app: FastAPI, ctx: Ctx, mcp: LazyMcp) -> Tokens:
    """The API, MCP and login routes; returns the tokens they accept."""
    tokens = ensure_tokens(ctx)
    bounds = ctx.config.server.limits
    logins = dashboard_auth.Sessions(
        full_limit=bounds.full_logins, read_only_limit=bounds.read_only_logins
    )
    setattr(app.state, dashboard_auth.STATE_KEY, logins)
    app.include_router(
        dashboard_auth.login_router(lambda: tokens, logins, ctx.config.server.public_url)
    )
    read, write = token_guards(lambda: tokens)
    app.include_router(conversation_router(lambda: ctx, read), prefix="/api/v1")
    app.include_router(build_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(attention_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(ops_router(lambda: ctx, read, write), prefix="/api/v1")
    public_url = ctx.config.server.public_url
    app.include_router(terminal_router(lambda: ctx, lambda: tokens, public_url), prefix="/api/v1")
    app.include_router(spend_router(lambda: ctx, read, write), prefix="/api/v1")
    app.include_router(cluster_router(lambda: ctx), prefix="/api/v1")
    app.include_router(mcp_router(mcp.handle, token_guard(lambda: tokens)))

    @app.get("/health", include_in_schema=False, dependencies=read)
    async def root_health() -> Health:
        return await health_now(ctx)

    @app.get("/metrics", include_in_schema=False, dependencies=read)
    async def metrics() -> PlainTextResponse:
        return await asyncio.to_thread(metrics_text, ctx)

    return tokens


def _mount_dashboard(app: FastAPI, ctx: Ctx) -> None:
    """The dashboard's pages and their static files (the login routes come with the auth)."""
    assets = Assets()
    app.include_router(assets.router())
    app.include_router(dashboard_router(lambda: ctx, Pages(assets)))


def error_response(exc: Exception) -> JSONResponse:
    """The answer to a ``LoopError`` (its status and code) or a ``sqlite3.Error`` (503)."""
    if isinstance(exc, LoopError):
        return JSONResponse(error_body(exc.code, exc.message), status_code=exc.status)
    return JSONResponse(error_body("state_error", f"the state database: {exc}"), status_code=503)


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(error_body(code, str(exc.detail)), status_code=exc.status_code)

    @app.exception_handler(LoopError)
    async def loop_error(_: Request, exc: LoopError) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(sqlite3.Error)
    async def state_error(_: Request, exc: sqlite3.Error) -> JSONResponse:
        return error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def validation_error(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
        return JSONResponse(error_body("validation_failed", "; ".join(problems)), status_code=422)
