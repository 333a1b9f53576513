"""REST API ``/api/v1``: thin routes over the same service functions the CLI calls.

Every route parses its input, calls one core function and renders the result in the output
contract (``the_loop.wire``: camelCase keys, ISO 8601 UTC times; the CLI's ``--format json`` of
the same object is equal). Errors come from the one exception tree and are rendered once by the
app as ``{"error": {"code", "message"}}``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse
from pydantic import Field

from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.errors import BadInput, Unavailable
from the_loop.instance import CONFIG_HEADER
from the_loop.intake import InboxItem, InboxStatus
from the_loop.intake.ops import inbox_items
from the_loop.pulse import Pulse
from the_loop.standing import service as standing
from the_loop.views import doctor, metrics
from the_loop.views import sessions as views
from the_loop.views.doctor import DoctorReport
from the_loop.views.health import Health, StatusReport
from the_loop.views.sessions import Screen, SessionView
from the_loop.views.status import health_now, status_now
from the_loop.web import auth, dashboard_auth
from the_loop.web.slots import Holder, Slots
from the_loop.wire import Wire, dumps
from the_loop.work_items import SessionRecord, SessionStatus
from the_loop.work_items import service as sessions
from the_loop.work_items.records import SessionSummary
from the_loop.work_items.start import Started, start_session

Guard = Callable[..., Any]


class MessageIn(Wire):
    text: str = Field(..., description="The message to deliver.")
    actor: str | None = Field(None, description="Who speaks (default: api).")


class StartIn(Wire):
    ref: str = Field(..., description="The work item: github:OWNER/REPO#N or local:NAME.")
    prompt: str = Field(..., description="What the agent should do.")
    harness: str | None = Field(None, description="A new session's harness (default: config).")
    actor: str | None = Field(None, description="On whose behalf (a login).")


class CloseIn(Wire):
    kill_tmux: bool | None = Field(None, description="Kill the tmux session (default: config).")


class Done(Wire):
    ok: bool = True
    detail: str = ""


def build_router(get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]) -> APIRouter:
    """The ``/api/v1`` routes; READ and WRITE are the dependencies guarding each kind."""
    router = APIRouter()
    _status_routes(router, get_ctx, read)
    _session_routes(router, get_ctx, read, write)
    _standing_routes(router, get_ctx, read, write)
    _event_routes(router, get_ctx, read)
    return router


def _status_routes(router: APIRouter, get_ctx: Callable[[], Ctx], read: list[Any]) -> None:
    @router.get("/health", tags=["status"], dependencies=read)
    async def get_health() -> Health:
        """Liveness and the problems that make the-loop unhealthy (answers within about
        100 ms even while the database is locked: unhealthy, saying so)."""
        return await health_now(get_ctx())

    @router.get("/status", tags=["status"], dependencies=read)
    async def get_status() -> StatusReport:
        """Whether the daemon runs (pid, url, version, start time), its health, sessions by
        status and inbox depth: what ``the-loop status --format json`` prints."""
        return await status_now(get_ctx())

    @router.get("/doctor", tags=["status"], dependencies=read)
    async def get_doctor() -> DoctorReport:
        """The doctor's checks (tmux, git, harnesses, state dir, port)."""
        return await asyncio.to_thread(doctor.run_doctor, get_ctx().config, True)

    @router.get("/inbox", tags=["inbox"], dependencies=read)
    async def get_inbox(
        status: InboxStatus | None = None, limit: int = Query(100, ge=1, le=10_000)
    ) -> list[InboxItem]:
        """Inbox items (pending, failed, dead-lettered, …), newest first (the counts by status
        are in ``GET /status``)."""
        return await asyncio.to_thread(inbox_items, get_ctx(), status, limit)


def _session_routes(
    router: APIRouter, get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]
) -> None:
    @router.get("/sessions", tags=["sessions"], dependencies=read)
    async def list_sessions(
        status: SessionStatus | None = None, limit: int = Query(100, ge=1, le=100_000)
    ) -> list[SessionSummary]:
        """Work-item sessions, newest first, each with its attention."""
        return await asyncio.to_thread(sessions.list_sessions, get_ctx(), status, limit)

    @router.post("/sessions", tags=["sessions"], dependencies=write)
    async def post_session(body: StartIn) -> Started:
        """Start the session of a work item (GitHub or ``local:NAME``), or deliver the prompt
        into its live session: what ``the-loop sessions start`` does."""
        return await asyncio.to_thread(
            start_session, get_ctx(), body.ref, body.prompt, body.harness, body.actor
        )

    @router.get("/sessions/{session_id:path}/screen", tags=["sessions"], dependencies=read)
    async def get_screen(session_id: str, lines: int = Query(200, ge=1, le=100_000)) -> Screen:
        """The last lines of the session's screen."""
        return await asyncio.to_thread(views.session_screen, get_ctx(), session_id, lines)

    @router.get("/sessions/{session_id:path}", tags=["sessions"], dependencies=read)
    async def get_session(session_id: str) -> SessionView:
        """One session by id, or the live (else latest) session of a work item ref, with its
        pane state and delivered-prompt count."""
        return await asyncio.to_thread(views.session_view, get_ctx(), session_id)

    @router.post("/sessions/{session_id:path}/messages", tags=["sessions"], dependencies=write)
    async def post_message(session_id: str, body: MessageIn) -> Done:
        """Deliver a message into a live session."""
        detail = await asyncio.to_thread(
            sessions.say, get_ctx(), session_id, body.text, body.actor or "api"
        )
        return Done(detail=detail)

    @router.post("/sessions/{session_id:path}/close", tags=["sessions"], dependencies=write)
    async def post_close(session_id: str, body: CloseIn | None = None) -> SessionRecord:
        """Close a session (its screen is kept unless killTmux)."""
        kill = body.kill_tmux if body else None
        return await asyncio.to_thread(sessions.close_by_operator, get_ctx(), session_id, kill)

    @router.post("/sessions/{session_id:path}/restart", tags=["sessions"], dependencies=write)
    async def post_restart(session_id: str) -> Done:
        """Stop the live session's agent and start it again, resuming its conversation, with
        the daemon's environment as it is now; then deliver what waits for it."""
        detail = await asyncio.to_thread(sessions.restart_by_operator, get_ctx(), session_id)
        return Done(detail=detail)

    @router.post("/sessions/{session_id:path}/pause", tags=["sessions"], dependencies=write)
    async def post_pause(session_id: str) -> SessionRecord:
        """Stop delivering events (dropped, not queued)."""
        return await asyncio.to_thread(sessions.pause_by_operator, get_ctx(), session_id, True)

    @router.post("/sessions/{session_id:path}/resume", tags=["sessions"], dependencies=write)
    async def post_resume(session_id: str) -> SessionRecord:
        """Deliver events again (nothing replayed)."""
        return await asyncio.to_thread(sessions.pause_by_operator, get_ctx(), session_id, False)


class StandingIn(Wire):
    name: str = Field(..., description="lowercase letters, digits and '-', at most 40")
    harness: str | None = None
    args: list[str] | None = Field(None, description="Omitted inherits; [] means none.")
    cwd: str | None = None
    prompt: str | None = Field(None, description="The operator's brief.")
    description: str = ""
    auto_start: bool = True
    start: bool = Field(True, description="Start it now.")


def _standing_routes(
    router: APIRouter, get_ctx: Callable[[], Ctx], read: list[Any], write: list[Any]
) -> None:
    @router.get("/standing", tags=["standing"], dependencies=read)
    async def list_standing(response: Response) -> list[standing.StandingView]:
        """Declared and created standing sessions with their status. The
        ``X-The-Loop-Config`` header names the config they were read under (the digest of the
        file's bytes, ``defaults`` without one): the CLI shows them only when that is the file it
        would read itself."""
        ctx = get_ctx()
        response.headers[CONFIG_HEADER] = ctx.loaded.digest or "defaults"
        return await asyncio.to_thread(standing.list_standing, ctx)

    @router.post("/standing", tags=["standing"], dependencies=write, status_code=201)
    async def create_standing(body: StandingIn) -> standing.CreateResult:
        """Create (and start, unless start is false) a standing session."""
        return await asyncio.to_thread(
            lambda: standing.create(
                get_ctx(),
                body.name,
                harness=body.harness,
                args=body.args,
                cwd=Path(body.cwd) if body.cwd else None,
                prompt=body.prompt,
                description=body.description,
                auto_start=body.auto_start,
                start_now=body.start,
            )
        )

    @router.get("/standing/{name}", tags=["standing"], dependencies=read)
    async def get_standing(name: str) -> standing.StandingView:
        """One standing session."""
        return await asyncio.to_thread(views.standing_view, get_ctx(), name)

    @router.delete("/standing/{name}", tags=["standing"], dependencies=write)
    async def delete_standing(name: str) -> standing.DeleteResult:
        """Stop and remove a created standing session (declared ones are refused)."""
        return await asyncio.to_thread(standing.delete, get_ctx(), name)

    @router.post("/standing/{name}/start", tags=["standing"], dependencies=write)
    async def start_standing(name: str) -> standing.StartOutcome:
        """Start (resuming its conversation when there is one)."""
        return (await asyncio.to_thread(standing.start, get_ctx(), name))[0]

    @router.post("/standing/{name}/stop", tags=["standing"], dependencies=write)
    async def stop_standing(name: str) -> standing.StopOutcome:
        """Stop: terminate the agent, then kill its tmux session."""
        return (await asyncio.to_thread(standing.stop, get_ctx(), name))[0]

    @router.post("/standing/{name}/restart", tags=["standing"], dependencies=write)
    async def restart_standing(name: str) -> standing.StartOutcome:
        """Stop then start (resuming)."""
        return await asyncio.to_thread(standing.restart, get_ctx(), name)

    @router.post("/standing/{name}/messages", tags=["standing"], dependencies=write)
    async def say_standing(name: str, body: MessageIn) -> standing.SayResult:
        """Deliver a message into a running standing session (never spawns)."""
        return await asyncio.to_thread(
            standing.say, get_ctx(), name, body.text, body.actor or "api"
        )


def _event_routes(router: APIRouter, get_ctx: Callable[[], Ctx], read: list[Any]) -> None:
    streams = Slots(get_ctx().config.server.limits.event_streams, "event streams")

    @router.get("/events", tags=["events"], dependencies=read)
    async def get_events(
        type: list[str] = Query([], description="Type glob, repeatable."),
        work_item: str | None = Query(None, alias="workItem"),
        standing: str | None = None,
        level: str = "debug",
        since: str | None = None,
        limit: int = Query(50, ge=1, le=100_000),
    ) -> list[ev.Event]:
        """Events, newest last."""
        flt = ev.parse_filter(type, work_item, standing, level, since, limit)
        return await asyncio.to_thread(ev.query, get_ctx().db, flt)

    @router.get("/events/types", tags=["events"], dependencies=read)
    async def get_event_types() -> list[ev.EventType]:
        """The event catalogue: type, level, description and payload fields."""
        return ev.catalogue()

    @router.get(
        "/events/stream", tags=["events"], dependencies=read, response_class=StreamingResponse
    )
    async def stream_events(
        request: Request,
        type: list[str] = Query([], description="Type glob, repeatable."),
        work_item: str | None = Query(None, alias="workItem"),
        standing: str | None = None,
        level: str = "debug",
    ) -> StreamingResponse:
        """Server-sent events as they are written (by any process); resumable with
        ``Last-Event-ID``. Without it the stream starts after the newest event."""
        ctx = get_ctx()
        last = request.headers.get("last-event-id", "")
        if last and not last.isdigit():
            raise BadInput("Last-Event-ID must be an event id")
        after = int(last) if last else ev.last_id(ctx.db)
        flt = ev.parse_filter(type, work_item, standing, level, None, None, after)
        holder = streams.take(getattr(request.state, "role", "full") != "full")
        if holder is None:
            raise Unavailable("too many event streams are open; try again later")
        return StreamingResponse(
            _sse(ctx, flt, request, streams, holder),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
        )


SSE_GAP_SECONDS = 0.2
"""The least time between two reads of a stream woken by commits (a burst costs one read a
gap)."""
SSE_CHECK_SECONDS = 1.0
"""How often a quiet stream checks that its client is still there (no read)."""
SSE_KEEPALIVE_SECONDS = 15.0


async def _sse(
    ctx: Ctx, flt: ev.EventFilter, request: Request, streams: Slots, holder: Holder
) -> AsyncIterator[str]:
    try:
        async for chunk in _follow(ctx, flt, request, holder):
            yield chunk
    finally:
        streams.give_back(holder)


async def _follow(
    ctx: Ctx, flt: ev.EventFilter, request: Request, holder: Holder
) -> AsyncIterator[str]:
    """The stream's text until the client leaves or HOLDER is ended (the cap needed room).
    The event log is read when something may have been written (a commit of the daemon,
    another process's write: a ``Pulse``), not on a beat: an open dashboard costs nothing
    while nothing happens."""
    after = flt.after_id
    pulse = Pulse(ctx.db, poll_unseen=True)
    quiet_since = time.monotonic()
    look = True
    try:
        yield "retry: 1000\n\n"
        while not holder.ended.is_set() and not await request.is_disconnected():
            # a change told meanwhile (even during the await above) is read, never cleared unread
            look = look or pulse.changed.is_set() or pulse.urgent.is_set()
            began = pulse.begin()
            if look:
                look = False
                batch = await asyncio.to_thread(ev.read_after, ctx.db, flt.following(after))
                for event in batch:
                    after = event.id
                    data = dumps(event, indent=None)
                    yield f"id: {event.id}\nevent: {event.type}\ndata: {data}\n\n"
                if batch:
                    quiet_since = time.monotonic()
                    look = True  # a full batch may have left more behind
                    continue
            if time.monotonic() - quiet_since >= SSE_KEEPALIVE_SECONDS:
                quiet_since = time.monotonic()
                yield ": keep-alive\n\n"
            await pulse.wait(holder.ended, began, began + SSE_CHECK_SECONDS, SSE_GAP_SECONDS)
    finally:
        pulse.close()


def token_guards(get_tokens: Callable[[], auth.Tokens]) -> tuple[list[Any], list[Any]]:
    """Dependencies enforcing the bearer tokens or the dashboard's cookie: (read, write)."""

    def read_guard(request: Request) -> str:
        return dashboard_auth.check(request, get_tokens(), write=False)

    def write_guard(request: Request) -> str:
        return dashboard_auth.check(request, get_tokens(), write=True)

    return [Depends(read_guard)], [Depends(write_guard)]


def metrics_text(ctx: Ctx) -> PlainTextResponse:
    """Prometheus text: sessions by status, deliveries, inbox depth, poll cycles, latency."""
    return PlainTextResponse(
        metrics.prometheus_text(ctx), media_type="text/plain; version=0.0.4; charset=utf-8"
    )
