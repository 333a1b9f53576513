"""The front door: who may send a body, how large and how slow, checked before it is read.

``FrontDoor`` is the outermost ASGI middleware of the app (SPEC §11: an unauthenticated request
costs almost nothing). For a request to a route that needs a token (``/api/v1/…``, ``/mcp``,
``/health``, ``/metrics``) it checks the bearer token or the dashboard cookie *from the headers*
and answers 401 before a byte of the body is read; then it reads the body itself, at most
``apiBodyBytes`` (else 413) within ``bodySeconds`` (else 408), and hands the app the bytes it
read. ``POST /login`` is rate-limited per client address and overall (429) before its body is
read, which is bounded the same way (``loginBodyBytes``). A refusal with a body still on the
wire closes the connection (``connection: close``), so the rest of the body is never read.
The intake routes (webhooks, Slack) authenticate by a signature over the body and bound their
bodies themselves (``web.webhooks``); pages and static files read no body.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from the_loop.config.limits import LimitsConfig
from the_loop.errors import LoopError
from the_loop.views.metrics import METRICS
from the_loop.web import auth, dashboard_auth

TOKEN_PREFIXES = ("/api/v1/", "/mcp/")
TOKEN_PATHS = frozenset({"/api/v1", "/mcp", "/health", "/metrics"})
PUBLIC_PATHS = frozenset({"/api/v1/openapi.json"})
ROLE_KEY = "role"
"""``request.state.role``: ``full`` or ``read-only``, who the front door let in."""


CLUSTER_PREFIX = "/api/v1/cluster/"
"""Node-to-node routes: their own guard checks the cluster token from the headers (a node
holds the cluster token, not an API token); they take no body."""


def needs_token(path: str) -> bool:
    """Whether PATH is served only to a caller with a token (or the dashboard's cookie)."""
    if path in PUBLIC_PATHS or path.startswith(CLUSTER_PREFIX):
        return False
    return path in TOKEN_PATHS or path.startswith(TOKEN_PREFIXES)


class _Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


class RateLimit:
    """At most PER_CLIENT attempts per client and OVERALL attempts in all per WINDOW seconds
    (sliding); memory bounded by the overall limit. Safe from any thread."""

    def __init__(self, per_client: int, overall: int, window: float = 60.0) -> None:
        self.per_client = per_client
        self.overall = overall
        self.window = window
        self._lock = threading.Lock()
        self._all: deque[tuple[float, str]] = deque()
        self._by_client: dict[str, int] = {}

    def admit(self, client: str, now: float) -> bool:
        """Count an attempt by CLIENT at NOW; False (and not counted) when over a limit."""
        with self._lock:
            while self._all and self._all[0][0] <= now - self.window:
                _, gone = self._all.popleft()
                left = self._by_client[gone] - 1
                if left:
                    self._by_client[gone] = left
                else:
                    del self._by_client[gone]
            if len(self._all) >= self.overall or self._by_client.get(client, 0) >= self.per_client:
                return False
            self._all.append((now, client))
            self._by_client[client] = self._by_client.get(client, 0) + 1
            return True


@dataclass(frozen=True, slots=True)
class _Plan:
    limit: int
    kind: Literal["token", "login", "logout"]


class FrontDoor:
    """Authenticate from the headers, then read a bounded body within a deadline (see module)."""

    def __init__(
        self,
        app: ASGIApp,
        get_tokens: Callable[[], auth.Tokens],
        limits: LimitsConfig,
    ) -> None:
        self.app = app
        self.get_tokens = get_tokens
        self.limits = limits
        self.logins = RateLimit(limits.logins_per_minute_per_client, limits.logins_per_minute)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        plan = self._plan(scope) if scope["type"] == "http" else None
        if plan is None:
            await self.app(scope, receive, send)
            return
        try:
            self._admit(scope, plan)
            body = await self._read(scope, receive, plan.limit)
        except _Refused as refused:
            METRICS.count_refused_request(refused.status)
            await _answer(scope, send, refused)
            return
        if body is None:  # the client went away mid-body: nobody to answer
            return
        await self.app(scope, _replay(body, receive), send)

    def _plan(self, scope: Scope) -> _Plan | None:
        path: str = scope["path"]
        if needs_token(path):
            return _Plan(self.limits.api_body_bytes, "token")
        if path == "/login" and scope["method"] == "POST":
            return _Plan(self.limits.login_body_bytes, "login")
        if path == "/logout" and scope["method"] == "POST":
            return _Plan(self.limits.login_body_bytes, "logout")
        return None

    def _admit(self, scope: Scope, plan: _Plan) -> None:
        conn = HTTPConnection(scope)
        if plan.kind == "login":
            client = conn.client.host if conn.client else "?"
            if not self.logins.admit(client, time.monotonic()):
                raise _Refused(429, "rate_limited", "too many login attempts; try again later")
        elif plan.kind == "token":
            try:
                role = dashboard_auth.identify(conn, self.get_tokens())
            except LoopError as exc:
                raise _Refused(exc.status, exc.code, exc.message) from None
            scope.setdefault("state", {})[ROLE_KEY] = role  # ``request.state.role`` below

    async def _read(self, scope: Scope, receive: Receive, limit: int) -> bytes | None:
        """The whole body (b"" when none is declared), None when the client left."""
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        if declared is None and b"chunked" not in headers.get(b"transfer-encoding", b""):
            return b""
        if declared is not None and declared.isdigit() and int(declared) > limit:
            raise _Refused(413, "payload_too_large", f"the body is over {limit} bytes")
        seconds = self.limits.body_seconds
        body = bytearray()
        try:
            async with asyncio.timeout(seconds):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        METRICS.count_disconnect()
                        return None
                    body += message.get("body", b"")
                    if len(body) > limit:
                        raise _Refused(413, "payload_too_large", f"the body is over {limit} bytes")
                    if not message.get("more_body", False):
                        return bytes(body)
        except TimeoutError:
            raise _Refused(
                408, "timeout", f"the body did not arrive within {seconds:g} s"
            ) from None


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that gives BODY once, then waits on RECEIVE (for the disconnect)."""
    given = False

    async def replayed() -> Message:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed


async def _answer(scope: Scope, send: Send, refused: _Refused) -> None:
    """The error in the API's shape; the connection closes after it (any body left unread)."""
    payload = json.dumps({"error": {"code": refused.code, "message": refused.message}}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    if refused.status == 401 and needs_token(scope["path"]):
        headers.append((b"www-authenticate", b"Bearer"))
    if refused.status == 429:
        headers.append((b"retry-after", b"60"))
    await send({"type": "http.response.start", "status": refused.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
