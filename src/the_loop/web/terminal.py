"""The browser terminal's WebSocket endpoints (``/api/v1/sessions/{id}/terminal`` and
``/api/v1/standing/{name}/terminal``).

Authentication happens before the socket is accepted (refused: close 1008, which the server
answers as HTTP 403): a bearer token (an ``Origin``, when sent, must be this server's), or the
dashboard's session cookie, which needs an ``Origin`` naming this server. Then the server sends
one TEXT frame ``{"type": "hello", "readOnly", "target", "cols", "rows"}`` (the terminal's size)
and bridges: BINARY frames to the client are raw terminal output; TEXT frames from the client
are JSON ``{"type": "input", "data"}`` or ``{"type": "resize", "cols", "rows"}``, anything else
is ignored. A writable terminal is the viewer's size and the agent's window follows it. A
read-only one drops input and resizes: it is the size of the agent's whole window, and the
server sends ``{"type": "size", "cols", "rows"}`` when that changes (decision 0042). When
the target cannot be shown, the server sends ``{"type": "error", "code", "message"}`` and
closes with 4000 + the HTTP status of the error (4404 not found, 4409 refused, 4400 headless,
4503 tmux unavailable). Once the agent has ended (before the hello, or while watched: it
exited, or the-loop is ending it) the server sends ``{"type": "ended", "message"}`` and then
the screen it left, kept as a record; the socket stays open, and nothing typed reaches
anything. Optional query parameters ``cols`` and ``rows`` give the first size.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect, WebSocketState

from the_loop.context import Ctx
from the_loop.errors import LoopError, StateError, Unavailable
from the_loop.refs import standing_key
from the_loop.web import auth, dashboard_auth
from the_loop.web.slots import Holder, Slots
from the_loop.web.terminal_bridge import (
    DEFAULT_COLS,
    DEFAULT_ROWS,
    Bridge,
    Plan,
    clamp_size,
    session_plan,
    standing_plan,
)

POLICY_VIOLATION = 1008
MAX_INPUT_CHARS = 65536
"""An input frame longer than this is dropped (a paste of that size is a message, not keys)."""
ENDED = "the agent has ended: its last screen, kept as a record (read-only)"
"""What the page says once the terminal shows the agent's record instead of its live pane."""
WINDOW_LOOK_GAP = 1.0
"""The least time between two looks of a read-only terminal at its agent's window size."""

Planner = Callable[[bool], Plan]


def terminal_router(
    get_ctx: Callable[[], Ctx], get_tokens: Callable[[], auth.Tokens], public_url: str = ""
) -> APIRouter:
    """The two WebSocket routes (not in the OpenAPI document: it has no WebSockets)."""
    router = APIRouter()
    limits = get_ctx().config.server.limits
    caps = Caps(Slots(limits.terminals, "browser terminals"), limits.terminals_per_session)

    @router.websocket("/sessions/{session_id}/terminal")
    async def session_terminal(websocket: WebSocket, session_id: str) -> None:
        await serve(
            websocket,
            get_tokens(),
            public_url,
            lambda read_only: session_plan(get_ctx(), session_id, read_only),
            caps,
            f"session:{session_id}",
        )

    @router.websocket("/standing/{name}/terminal")
    async def standing_terminal(websocket: WebSocket, name: str) -> None:
        await serve(
            websocket,
            get_tokens(),
            public_url,
            lambda read_only: standing_plan(get_ctx(), name, read_only),
            caps,
            standing_key(name),
        )

    return router


@dataclass
class Caps:
    """How many browser terminals may be open: OVERALL, and PER_SESSION on one session."""

    overall: Slots
    per_session: int
    sessions: dict[str, Slots] = field(default_factory=dict)

    def take(self, key: str, read_only: bool) -> list[tuple[Slots, Holder]] | None:
        """Places in both pools (the oldest read-only viewer ending where one is full), or
        None when a pool is full of viewers that can type."""
        mine = self.sessions.setdefault(key, Slots(self.per_session, "browser terminals"))
        first = mine.take(read_only)
        if first is None:
            return None
        second = self.overall.take(read_only)
        if second is None:
            mine.give_back(first)
            return None
        return [(mine, first), (self.overall, second)]

    def give_back(self, key: str, taken: list[tuple[Slots, Holder]]) -> None:
        for pool, holder in taken:
            pool.give_back(holder)
        if key in self.sessions and not len(self.sessions[key]):
            del self.sessions[key]


@dataclass(frozen=True, slots=True)
class Grant:
    """An accepted handshake: the role, and the dashboard login it rests on (None for a
    bearer token), whose logout or expiry ends the terminal."""

    role: str
    login: tuple[dashboard_auth.Sessions, str, dashboard_auth.Viewer] | None = None


def authorize(websocket: WebSocket, tokens: auth.Tokens, public_url: str) -> Grant | None:
    """The grant for an acceptable handshake, None to refuse it."""
    origin_ok = dashboard_auth.same_origin(websocket, public_url)
    if dashboard_auth.has_bearer(websocket):
        if websocket.headers.get("origin") and not origin_ok:
            return None
        _, _, presented = websocket.headers.get("authorization", "").partition(" ")
        if auth.equal(presented.strip(), tokens.full):
            return Grant("full")
        if auth.equal(presented.strip(), tokens.read_only):
            return Grant("read-only")
        return None
    login = dashboard_auth.login_of(websocket)
    if login is None or not origin_ok:
        return None
    return Grant(login[2].role, login)


async def serve(
    websocket: WebSocket,
    tokens: auth.Tokens,
    public_url: str,
    plan: Planner,
    caps: Caps,
    key: str,
) -> None:
    """Authenticate, take a place under CAPS, plan, then bridge WEBSOCKET to a tmux client
    until either side ends (or the dashboard login it came with is logged out or expires, or
    a newcomer takes its place at the cap)."""
    grant = authorize(websocket, tokens, public_url)
    if grant is None:
        await websocket.close(code=POLICY_VIOLATION)
        return
    await websocket.accept()
    taken = caps.take(key, grant.role != "full")
    if taken is None:
        await _refuse(websocket, Unavailable("too many browser terminals are open; try later"))
        return
    try:
        await _serve(websocket, plan, grant, [holder.ended for _, holder in taken])
    finally:
        caps.give_back(key, taken)


async def _serve(
    websocket: WebSocket, plan: Planner, grant: Grant, evicted: list[asyncio.Event]
) -> None:
    try:
        chosen = await asyncio.to_thread(plan, grant.role != "full")
    except LoopError as exc:
        await _refuse(websocket, exc)
        return
    except sqlite3.Error as exc:
        await _refuse(websocket, StateError(f"the state database: {exc}"))
        return
    size = _first_size(websocket)
    if chosen.read_only:
        window = await asyncio.to_thread(chosen.window_view)
        size = window or size
    bridge = Bridge(chosen, *size)
    try:
        try:
            await bridge.start()
        except OSError as exc:
            await _refuse(websocket, LoopError(f"cannot start the terminal: {exc}"))
            return
        hello = {"type": "hello", "readOnly": chosen.read_only, "target": chosen.target}
        await websocket.send_text(json.dumps({**hello, "cols": size[0], "rows": size[1]}))
        await _pump(websocket, bridge, grant, evicted)
    finally:
        await bridge.aclose()
        if websocket.application_state is WebSocketState.CONNECTED:
            with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
                await websocket.close(code=1000)


def _first_size(websocket: WebSocket) -> tuple[int, int]:
    params = websocket.query_params
    try:
        found = clamp_size(int(params.get("cols", "")), int(params.get("rows", "")))
    except ValueError:
        found = None
    return found or (DEFAULT_COLS, DEFAULT_ROWS)


async def _refuse(websocket: WebSocket, exc: LoopError) -> None:
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.send_text(
            json.dumps({"type": "error", "code": exc.code, "message": exc.message})
        )
        await websocket.close(code=4000 + exc.status, reason=exc.code)


async def _pump(
    websocket: WebSocket, bridge: Bridge, grant: Grant, evicted: list[asyncio.Event]
) -> None:
    """Output to the socket and frames from it, concurrently, until one side ends (or EVICTED:
    a newcomer took this terminal's place at a cap)."""
    tasks = {
        asyncio.create_task(_send_output(websocket, bridge)),
        asyncio.create_task(_receive_frames(websocket, bridge)),
        *(asyncio.create_task(ended.wait()) for ended in evicted),
    }
    if grant.login is not None:
        tasks.add(asyncio.create_task(_logged_out(websocket, grant.login)))
    if bridge.plan.read_only:
        tasks.add(asyncio.create_task(_follow_window(websocket, bridge)))
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, WebSocketDisconnect, RuntimeError):
                await task


async def _logged_out(
    websocket: WebSocket, login: tuple[dashboard_auth.Sessions, str, dashboard_auth.Viewer]
) -> None:
    """Return (closing the socket) once the login is logged out or expires."""
    logins, sid, viewer = login
    ended = logins.watch(sid)
    try:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(ended.wait(), timeout=max(0.0, viewer.expires - time.time()))
    finally:
        logins.unwatch(sid, ended)
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.close(code=POLICY_VIOLATION, reason="logged out")


async def _follow_window(websocket: WebSocket, bridge: Bridge) -> None:
    """Keep a read-only terminal the size of the agent's window, telling the page each
    change; runs until cancelled. tmux redraws every client of a window that changes size, so
    the size is asked only after the client printed (at most once per ``WINDOW_LOOK_GAP``):
    nothing is asked of tmux while the screen stands still."""
    while True:
        await bridge.printed.wait()
        bridge.printed.clear()
        size = await asyncio.to_thread(bridge.plan.window_view)
        if size is not None and size != bridge.size:
            bridge.resize(*size)
            message = {"type": "size", "cols": size[0], "rows": size[1]}
            await websocket.send_text(json.dumps(message))
        await asyncio.sleep(WINDOW_LOOK_GAP)


async def _send_output(websocket: WebSocket, bridge: Bridge) -> None:
    told = False
    while (data := await bridge.output()) is not None:
        if bridge.shows_record and not told:
            told = True
            await websocket.send_text(json.dumps({"type": "ended", "message": ENDED}))
        await websocket.send_bytes(data)
    with contextlib.suppress(RuntimeError, OSError, WebSocketDisconnect):
        await websocket.close(code=1000, reason="the terminal ended")


async def _receive_frames(websocket: WebSocket, bridge: Bridge) -> None:
    while True:
        message = await websocket.receive()
        if message["type"] == "websocket.disconnect":
            return
        text = message.get("text")
        if isinstance(text, str):
            handle_frame(bridge, text)


def handle_frame(bridge: Bridge, text: str) -> None:
    """Apply one client TEXT frame; anything malformed is ignored."""
    try:
        frame = json.loads(text)
    except ValueError:
        return
    if not isinstance(frame, dict):
        return
    kind = frame.get("type")
    if kind == "input":
        data = frame.get("data")
        if isinstance(data, str) and len(data) <= MAX_INPUT_CHARS:
            bridge.write(data.encode("utf-8", "replace"))
    elif kind == "resize" and not bridge.plan.read_only:
        size = clamp_size(frame.get("cols"), frame.get("rows"))
        if size is not None:
            bridge.resize(*size)
