"""The dashboard at ``/``: server-rendered pages over the same core functions the API calls.

Sessions, Attention, Session (the browser terminal), Standing, Events and Status. A visitor
without a session cookie is sent to ``/login``. Pages only read; every change is a ``fetch`` of
the ``/api/v1`` route the CLI's verb maps to, with the CSRF token from the page's
``<meta name="csrf-token">`` (the login token itself never reaches the page). A read-only
viewer is shown no control the API would refuse. Each page is live: its script follows
``/api/v1/events/stream`` and re-renders the page's live region when an event it cares about
arrives.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute

from the_loop import events
from the_loop.agent.attention import STATES
from the_loop.agent.attention import service as attention
from the_loop.config import BUILTIN_HARNESSES
from the_loop.context import Ctx
from the_loop.errors import BadInput, LoopError
from the_loop.intake import InboxStatus
from the_loop.standing import service as standing
from the_loop.views import dashboard as dashboard_views
from the_loop.web.dashboard_auth import Viewer, viewer
from the_loop.web.page_headers import PAGE_HEADERS
from the_loop.web.render import Pages
from the_loop.work_items import SessionStatus


def _choice(value: str | None) -> str | None:
    return value.strip() or None if value is not None else None


def _error_pages(pages: Pages) -> type[APIRoute]:
    """A route class rendering the one error tree as an HTML page (status and message) for a
    logged-in viewer, instead of the API's JSON."""

    class PageRoute(APIRoute):
        def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
            handler = super().get_route_handler()

            async def run(request: Request) -> Response:
                try:
                    return await handler(request)
                except LoopError as exc:
                    who = viewer(request)
                    if who is None:
                        raise
                    html = pages.render(
                        "error.html", viewer=who, page_key="", status=exc.status, error=exc
                    )
                    return HTMLResponse(html, status_code=exc.status, headers=PAGE_HEADERS)

            return run

    return PageRoute


def dashboard_router(get_ctx: Callable[[], Ctx], pages: Pages) -> APIRouter:
    """The page routes (not in the OpenAPI document)."""
    router = APIRouter(include_in_schema=False, route_class=_error_pages(pages))

    async def page(request: Request, template: str, who: Viewer, **context: Any) -> HTMLResponse:
        key = template.removesuffix(".html")
        key = {"session": "sessions", "standing_session": "standing"}.get(key, key)
        # the navigation's count: the sessions the Attention page lists (waiting on a person)
        waiting = await asyncio.to_thread(_waiting, get_ctx())
        html = pages.render(template, viewer=who, page_key=key, waiting_count=waiting, **context)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    def login(request: Request) -> Response:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        where = "/login" if target == "/" else f"/login?{urlencode({'next': target})}"
        return RedirectResponse(where, status_code=303, headers={"Cache-Control": "no-store"})

    @router.get("/", response_model=None)
    async def sessions_page(
        request: Request,
        status: str | None = None,
        attention_state: str | None = Query(None, alias="attention"),
        repo: str | None = None,
    ) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        wanted = _status(_choice(status))
        state, repo = _choice(attention_state), _choice(repo)
        every = await asyncio.to_thread(dashboard_views.session_rows, get_ctx(), wanted)
        rows = dashboard_views.narrow(every, state, repo)
        return await page(
            request,
            "sessions.html",
            who,
            rows=rows,
            repos=dashboard_views.repos(every),
            statuses=[s.value for s in SessionStatus],
            states=STATES,
            chosen={"status": status or "", "attention": state or "", "repo": repo or ""},
            harnesses=harness_choices(get_ctx()),
            default_harness=get_ctx().config.routing.default_harness,
        )

    @router.get("/sessions", response_model=None)
    async def sessions_alias(request: Request) -> Response:
        """The Sessions page is ``/`` (a session's own page is ``/sessions/ID``): a person who
        types ``/sessions`` is sent there, with the filters given."""
        query = f"?{request.url.query}" if request.url.query else ""
        return RedirectResponse(f"/{query}", status_code=307)

    @router.get("/attention", response_model=None)
    async def attention_page(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        waiting = await asyncio.to_thread(attention.list_attention, get_ctx())
        return await page(request, "attention.html", who, waiting=waiting)

    @router.get("/sessions/{session_id}", response_model=None)
    async def session_page(request: Request, session_id: str) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        found = await asyncio.to_thread(dashboard_views.session_page, get_ctx(), session_id)
        return await page(request, "session.html", who, s=found)

    @router.get("/standing", response_model=None)
    async def standing_page(request: Request) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        listed = await asyncio.to_thread(standing.list_standing, get_ctx())
        ctx = get_ctx()
        return await page(
            request,
            "standing.html",
            who,
            listed=listed,
            harnesses=harness_choices(ctx),
            default_harness=ctx.config.routing.default_harness,
        )

    @router.get("/standing/{name}", response_model=None)
    async def standing_session_page(request: Request, name: str) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        found = await asyncio.to_thread(dashboard_views.standing_page, get_ctx(), name)
        return await page(
            request,
            "standing_session.html",
            who,
            st=found.standing,
            attention=found.attention,
            waiting=found.waiting,
        )

    @router.get("/events", response_model=None)
    async def events_page(
        request: Request,
        type_: str | None = Query(None, alias="type"),
        work_item: str | None = Query(None, alias="workItem"),
        standing_name: str | None = Query(None, alias="standing"),
        level: str | None = None,
    ) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        chosen = {
            "type": _choice(type_) or "",
            "workItem": _choice(work_item) or "",
            "standing": _choice(standing_name) or "",
            "level": _choice(level) or "debug",
        }
        flt = events.parse_filter(
            [chosen["type"]] if chosen["type"] else [],
            chosen["workItem"] or None,
            chosen["standing"] or None,
            chosen["level"],
            None,
            100,
        )
        found = await asyncio.to_thread(events.query, get_ctx().db, flt)
        return await page(
            request,
            "events.html",
            who,
            events=list(reversed(found)),
            chosen=chosen,
            levels=("debug", "info", "warning", "error"),
        )

    @router.get("/status", response_model=None)
    async def status_page(request: Request, inbox: str | None = None) -> Response:
        who = viewer(request)
        if who is None:
            return login(request)
        wanted = _inbox_status(_choice(inbox))
        report = await asyncio.to_thread(dashboard_views.status_page, get_ctx(), wanted)
        return await page(
            request,
            "status.html",
            who,
            r=report,
            inbox_statuses=[s.value for s in InboxStatus],
            chosen_inbox=inbox or "",
        )

    return router


def _waiting(ctx: Ctx) -> int | None:
    """How many live sessions wait on a person; None when the database cannot say."""
    try:
        return len(attention.list_attention(ctx))
    except (LoopError, sqlite3.Error):
        return None


def harness_choices(ctx: Ctx) -> list[str]:
    """The harnesses a form offers: the built-in ones and those the config names."""
    return sorted(set(BUILTIN_HARNESSES) | set(ctx.config.harnesses))


def _status(value: str | None) -> SessionStatus | None:
    try:
        return SessionStatus(value) if value else None
    except ValueError:
        raise BadInput(f"invalid status {value!r}: queued, active, paused or closed") from None


def _inbox_status(value: str | None) -> InboxStatus | None:
    try:
        return InboxStatus(value) if value else None
    except ValueError:
        names = ", ".join(s.value for s in InboxStatus)
        raise BadInput(f"invalid inbox status {value!r}: {names}") from None
