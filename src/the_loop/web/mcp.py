"""MCP: the same service functions as tools, over streamable HTTP (``/mcp``) and stdio.

Each tool is a thin wrapper of one service function. Reading tools may be called with either
token; the two ``say_*`` tools need the full token when served over HTTP (the read-only token
gets a tool error). Creating, deleting, closing and stopping are deliberately not tools. Errors
from the-loop's exception tree become tool errors carrying ``<code>: <message>``, never a
traceback.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any, TypeVar
from urllib.parse import urlsplit

from fastapi import Request
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import ToolAnnotations
from pydantic import Field
from starlette.types import Receive, Scope, Send

from the_loop import __version__
from the_loop import events as ev
from the_loop.agent.attention import service as attention
from the_loop.context import Ctx
from the_loop.errors import Forbidden, LoopError, ValidationFailed
from the_loop.standing import service as standing
from the_loop.views import sessions as views
from the_loop.views.sessions import Screen, SessionView
from the_loop.web import auth
from the_loop.web.api import Done
from the_loop.web.mcp_door import ACCESS_KEY, not_running
from the_loop.work_items import SessionStatus
from the_loop.work_items import service as sessions
from the_loop.work_items.records import SessionSummary

T = TypeVar("T")

READ_TOOLS = (
    "list_sessions",
    "get_session",
    "read_session_screen",
    "list_standing_sessions",
    "get_standing_session",
    "query_events",
    "list_attention",
)
WRITE_TOOLS = ("say_to_session", "say_to_standing_session")
TOOLS = READ_TOOLS + WRITE_TOOLS
"""Every tool the server offers; the documented list (docs/mcp.md), tested."""

"""``request.state`` attribute an HTTP guard sets to ``full`` or ``read-only``."""

INSTRUCTIONS = (
    "the-loop runs AI coding agents in tmux: work-item sessions (one per GitHub issue or pull "
    "request, addressed by session id or github:OWNER/REPO#N) and named standing sessions. "
    "Use these tools to look at them, read their screens and event log, and send them messages."
)

SessionArg = Annotated[
    str, Field(description="A session id, or github:OWNER/REPO#N for its live (else latest) one.")
]
NameArg = Annotated[str, Field(description="Standing session name, e.g. supervisor.")]
TextArg = Annotated[str, Field(description="The message to paste into the agent.")]
ActorArg = Annotated[str, Field(description="Who speaks (shown to the agent).")]

_READ = ToolAnnotations(read_only_hint=True, open_world_hint=False)
_SAY = ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)


def _tool_error(exc: LoopError) -> ToolError:
    problems = exc.problems if isinstance(exc, ValidationFailed) else []
    return ToolError("\n".join([f"{exc.code}: {exc.message}", *problems]))


def _require_full(context: Context[Any, Any]) -> None:
    """Refuse a write over HTTP with the read-only token; stdio and in-process are full."""
    try:
        request = context.request_context.request
    except ValueError:
        return
    if isinstance(request, Request) and getattr(request.state, ACCESS_KEY, "full") != "full":
        raise Forbidden("the read-only token cannot change anything; use the full token")


def _call(fn: Callable[[], T]) -> T:
    """FN's result; an error of the-loop's tree becomes a tool error."""
    try:
        return fn()
    except LoopError as exc:
        raise _tool_error(exc) from None


def build_server(get_ctx: Callable[[], Ctx]) -> MCPServer:
    """An MCP server whose tools (exactly ``TOOLS``) call the service on ``get_ctx()``."""
    server = _quietly(
        lambda: MCPServer(
            "the-loop", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING"
        )
    )
    _session_tools(server, get_ctx)
    _standing_tools(server, get_ctx)
    _event_tools(server, get_ctx)

    @server.tool(annotations=_READ)
    def list_attention() -> list[attention.AttentionView]:
        """Every live session waiting on a person, oldest first, with its question or the tool
        awaiting permission (approvals are not an MCP tool: answer where the person is)."""
        return _call(lambda: attention.list_attention(get_ctx()))

    return server


def _quietly(make: Callable[[], T]) -> T:
    """MAKE's result, with the root logger as it was: ``MCPServer`` calls
    ``logging.basicConfig``, and logging belongs to the host process (the daemon, a caller's
    app), which may configure it later."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        return make()
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def _session_tools(server: MCPServer, get_ctx: Callable[[], Ctx]) -> None:
    @server.tool(annotations=_READ)
    def list_sessions(
        status: SessionStatus | None = None,
        limit: Annotated[int, Field(ge=1, le=100_000)] = 100,
    ) -> list[SessionSummary]:
        """Work-item sessions, newest first, optionally only those with STATUS."""
        return _call(lambda: sessions.list_sessions(get_ctx(), status, limit))

    @server.tool(annotations=_READ)
    def get_session(session: SessionArg) -> SessionView:
        """One work-item session, with ``pane`` (live, dead, absent, unknown, headless or
        elsewhere: on another node) and ``deliveries`` (prompts delivered so far)."""
        return _call(lambda: views.session_view(get_ctx(), session))

    @server.tool(annotations=_SAY)
    def say_to_session(
        session: SessionArg, text: TextArg, context: Context[Any, Any], actor: ActorArg = "mcp"
    ) -> Done:
        """Deliver a message into a live work-item session (needs the full token)."""

        def say() -> Done:
            _require_full(context)
            return Done(detail=sessions.say(get_ctx(), session, text, actor))

        return _call(say)

    @server.tool(annotations=_READ)
    def read_session_screen(
        session: SessionArg, lines: Annotated[int, Field(ge=1, le=100_000)] = 200
    ) -> Screen:
        """The last LINES lines of the session's screen (its transcript when headless)."""
        return _call(lambda: views.session_screen(get_ctx(), session, lines))


def _standing_tools(server: MCPServer, get_ctx: Callable[[], Ctx]) -> None:
    @server.tool(annotations=_READ)
    def list_standing_sessions() -> list[standing.StandingView]:
        """Declared and created standing sessions with their status."""
        return _call(lambda: standing.list_standing(get_ctx()))

    @server.tool(annotations=_READ)
    def get_standing_session(name: NameArg) -> standing.StandingView:
        """One standing session: source, status, harness, conversation, last message."""
        return _call(lambda: views.standing_view(get_ctx(), name))

    @server.tool(annotations=_SAY)
    def say_to_standing_session(
        name: NameArg, text: TextArg, context: Context[Any, Any], actor: ActorArg = "mcp"
    ) -> standing.SayResult:
        """Deliver a message into a running standing session; never starts one (needs the
        full token)."""

        def say() -> standing.SayResult:
            _require_full(context)
            return standing.say(get_ctx(), name, text, actor)

        return _call(say)


def _event_tools(server: MCPServer, get_ctx: Callable[[], Ctx]) -> None:
    @server.tool(annotations=_READ)
    def query_events(
        types: Annotated[list[str], Field(description="Type globs, e.g. session.*")] = [],  # noqa: B006
        work_item: Annotated[str | None, Field(description="github:OWNER/REPO#N")] = None,
        standing: Annotated[str | None, Field(description="Standing session name")] = None,
        level: Annotated[str, Field(description="debug, info, warning or error")] = "debug",
        since: Annotated[str | None, Field(description="30s, 15m, 2h, 1d or ISO")] = None,
        limit: Annotated[int, Field(ge=1, le=100_000)] = 50,
    ) -> list[ev.Event]:
        """The newest LIMIT events of the log matching every filter given, oldest first."""

        def query() -> list[ev.Event]:
            flt = ev.parse_filter(types, work_item, standing, level, since, limit)
            return ev.query(get_ctx().db, flt)

        return _call(query)


# --- streamable HTTP ------------------------------------------------------------------------


def transport_security(host: str | None, public_url: str = "") -> TransportSecuritySettings:
    """The DNS-rebinding guard. On a loopback HOST only loopback ``Host`` headers (any port)
    and the host of PUBLIC_URL (a reverse proxy's) are answered, others get 421; elsewhere, or
    with no HOST (embedded in a caller's app), the guard is off and the token is the gate."""
    if host is None or not auth.is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts = ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
    public = urlsplit(public_url)
    if public.scheme and public.netloc:
        hosts.append(public.netloc)
        origins.append(f"{public.scheme}://{public.netloc}")
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


class McpEndpoint:
    """SERVER over streamable HTTP. ``running()`` starts a fresh session manager (enter it in
    the app's lifespan; it may be entered again after it exits); ``handle`` is the ASGI app,
    answering 503 while no manager runs."""

    def __init__(self, server: MCPServer, host: str | None = None, public_url: str = "") -> None:
        self.server = server
        self.security = transport_security(host, public_url)
        self._manager: StreamableHTTPSessionManager | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        self.server.streamable_http_app(streamable_http_path="/", transport_security=self.security)
        manager = self.server.session_manager
        async with manager.run():
            self._manager = manager
            try:
                yield
            finally:
                self._manager = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager
        if manager is None:
            await not_running(scope, receive, send)
            return
        await manager.handle_request(scope, receive, send)
