"""Dashboard login: the API token exchanged for a server-side session behind a cookie.

``POST /login`` checks the presented token (full or read-only, constant time) and answers with
the cookie ``the_loop_session``: a random id (HttpOnly, SameSite=Strict, Path=/, Secure when the
request came over HTTPS or ``server.publicUrl`` is https). The id maps, in the daemon's memory
only, to the viewer's role, a CSRF token and an expiry; the token itself is never put in a
cookie or a page. A daemon restart forgets every session (everyone logs in again). ``POST
/logout`` forgets the session and clears the cookie. See decision 0021.

The REST API accepts the cookie as well as the bearer token (``check``): a cookie-authenticated
request that is not a GET/HEAD/OPTIONS must carry ``X-CSRF-Token`` equal to its session's CSRF
token; the read-only role may only read. Pages use ``viewer(request)``, ``require_viewer`` and
``template_context(request)`` (which gives templates ``viewer`` and ``csrf_token``).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates
from starlette.requests import HTTPConnection

from the_loop.errors import BadInput, Forbidden, Unauthorized
from the_loop.web import auth
from the_loop.web.page_headers import PAGE_HEADERS

COOKIE = "the_loop_session"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf_token"
SESSION_SECONDS = 12 * 3600
"""How long a login lasts (absolute, not sliding)."""
MAX_FULL_LOGINS = 200
MAX_READ_ONLY_LOGINS = 1000
"""The oldest logins of a role are forgotten beyond its limit (memory stays bounded); the two
roles are kept apart, so read-only logins never push out a full one."""
MAX_LOGIN_BODY = 8192
LOGIN_BODY_SECONDS = 10.0
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
STATE_KEY = "dashboard_sessions"
"""Where the app keeps its ``Sessions`` (``app.state``)."""

TEMPLATES = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))
"""The dashboard's templates (``src/the_loop/web/templates``)."""


@dataclass(frozen=True, slots=True)
class Viewer:
    """Who is looking at the dashboard: their role and their session's CSRF token."""

    role: str
    """``full`` or ``read-only``."""
    csrf_token: str
    expires: float

    @property
    def read_only(self) -> bool:
        return self.role != "full"


class Sessions:
    """Dashboard logins, in memory: session id → ``Viewer``, in two bounded pools (full and
    read-only; the oldest of a pool is forgotten when it is full). Safe from any thread."""

    def __init__(
        self,
        lifetime: float = SESSION_SECONDS,
        full_limit: int = MAX_FULL_LOGINS,
        read_only_limit: int = MAX_READ_ONLY_LOGINS,
    ) -> None:
        self._lifetime = lifetime
        self._limits = {"full": full_limit, "read-only": read_only_limit}
        self._lock = threading.Lock()
        self._by_id: dict[str, Viewer] = {}
        self._pools: dict[str, OrderedDict[str, None]] = {
            "full": OrderedDict(),
            "read-only": OrderedDict(),
        }
        self._watchers: dict[str, set[asyncio.Event]] = {}

    def create(self, role: str) -> tuple[str, Viewer]:
        sid = secrets.token_urlsafe(32)
        viewer = Viewer(role, secrets.token_urlsafe(32), time.time() + self._lifetime)
        pool = self._pools["full" if role == "full" else "read-only"]
        limit = self._limits["full" if role == "full" else "read-only"]
        with self._lock:
            self._by_id[sid] = viewer
            pool[sid] = None
            while len(pool) > limit:
                oldest = pool.popitem(last=False)[0]
                self._by_id.pop(oldest, None)
                self._ended(oldest)
        return sid, viewer

    def get(self, sid: str) -> Viewer | None:
        with self._lock:
            viewer = self._by_id.get(sid)
            if viewer is not None and viewer.expires <= time.time():
                self._forget(sid)
                return None
            return viewer

    def drop(self, sid: str) -> None:
        """Forget SID (logout); whoever ``watch``es it is told."""
        with self._lock:
            self._forget(sid)

    def watch(self, sid: str) -> asyncio.Event:
        """An event set when SID is logged out or forgotten (call on the event loop)."""
        event = asyncio.Event()
        with self._lock:
            if sid in self._by_id:
                self._watchers.setdefault(sid, set()).add(event)
            else:
                event.set()
        return event

    def unwatch(self, sid: str, event: asyncio.Event) -> None:
        with self._lock:
            found = self._watchers.get(sid)
            if found is not None:
                found.discard(event)
                if not found:
                    del self._watchers[sid]

    def _forget(self, sid: str) -> None:
        self._by_id.pop(sid, None)
        for pool in self._pools.values():
            pool.pop(sid, None)
        self._ended(sid)

    def _ended(self, sid: str) -> None:
        for event in self._watchers.pop(sid, set()):
            event.set()

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)


def _sessions(conn: HTTPConnection) -> Sessions | None:
    found = getattr(conn.app.state, STATE_KEY, None)
    return found if isinstance(found, Sessions) else None


def login_of(conn: HTTPConnection) -> tuple[Sessions, str, Viewer] | None:
    """The logins table, session id and viewer behind a connection's cookie, if valid."""
    sid = conn.cookies.get(COOKIE)
    store = _sessions(conn)
    if not sid or store is None:
        return None
    found = store.get(sid)
    return (store, sid, found) if found is not None else None


def viewer(conn: HTTPConnection) -> Viewer | None:
    """The logged-in viewer of a request or WebSocket, from its cookie; None when there is
    no valid session."""
    found = login_of(conn)
    return found[2] if found is not None else None


def require_viewer(request: Request) -> Viewer:
    """FastAPI dependency: the logged-in viewer, or 401 (pages redirect to /login themselves
    by calling ``viewer``)."""
    found = viewer(request)
    if found is None:
        raise Unauthorized("not logged in")
    return found


def template_context(request: Request) -> dict[str, Any]:
    """What every dashboard template gets: ``request``, ``viewer`` and ``csrf_token``."""
    found = viewer(request)
    return {
        "request": request,
        "viewer": found,
        "csrf_token": found.csrf_token if found is not None else "",
    }


def has_bearer(conn: HTTPConnection) -> bool:
    scheme, _, value = conn.headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and bool(value.strip())


def csrf_ok(found: Viewer, presented: str | None) -> bool:
    return bool(presented) and hmac.compare_digest(
        found.csrf_token.encode(), (presented or "").encode()
    )


def identify(conn: HTTPConnection, tokens: auth.Tokens) -> str:
    """Who presents CONN, from its headers alone: ``full`` or ``read-only`` for a valid bearer
    token or dashboard cookie; ``Unauthorized`` otherwise. What the caller may do (write, CSRF)
    is the route's ``check``."""
    if has_bearer(conn):
        _, _, value = conn.headers.get("authorization", "").partition(" ")
        if auth.equal(value.strip(), tokens.full):
            return "full"
        if auth.equal(value.strip(), tokens.read_only):
            return "read-only"
        raise Unauthorized("invalid token")
    found = viewer(conn)
    if found is not None:
        return found.role
    if conn.cookies.get(COOKIE):
        raise Unauthorized("the dashboard session has expired or was logged out")
    raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")


def check(request: Request, tokens: auth.Tokens, write: bool) -> str:
    """Authenticate an API request by its bearer token, else by its dashboard cookie; return
    ``full`` or ``read-only``. A cookie-authenticated request that changes anything needs the
    session's CSRF token in ``X-CSRF-Token`` (403 ``csrf`` otherwise)."""
    if has_bearer(request):
        return auth.check(request, tokens, write)
    found = viewer(request)
    if found is None:
        if request.cookies.get(COOKIE):
            raise Unauthorized("the dashboard session has expired or was logged out")
        return auth.check(request, tokens, write)  # says what is missing
    if request.method.upper() not in SAFE_METHODS and not csrf_ok(
        found, request.headers.get(CSRF_HEADER)
    ):
        raise CsrfFailed("missing or wrong X-CSRF-Token for a cookie-authenticated request")
    if found.read_only and (write or request.method.upper() not in SAFE_METHODS):
        raise Forbidden("the read-only login cannot change anything")
    return found.role


class CsrfFailed(Forbidden):
    """A cookie-authenticated request that changes something came without its CSRF token."""

    code = "csrf"


def same_origin(conn: HTTPConnection, public_url: str = "") -> bool:
    """Whether the ``Origin`` header names this server: the request's own scheme and host
    (``Host`` header), or ``public_url``'s origin. An absent ``Origin`` is not same-origin."""
    origin = conn.headers.get("origin")
    if not origin:
        return False
    own_scheme = "https" if conn.url.scheme in ("https", "wss") else "http"
    allowed = {f"{own_scheme}://{conn.headers.get('host', '')}".lower()}
    if public_url:
        parts = urlsplit(public_url)
        allowed.add(f"{parts.scheme}://{parts.netloc}".lower())
    return origin.strip().lower().rstrip("/") in allowed


def _secure(request: Request, public_url: str) -> bool:
    return request.url.scheme == "https" or public_url.lower().startswith("https://")


def safe_next(value: str | None) -> str:
    """A redirect target that stays on this site: an absolute path (not ``//host``, no
    backslash or control characters); anything else is ``/``."""
    if (
        not value
        or not value.startswith("/")
        or value.startswith("//")
        or "\\" in value
        or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)
        or len(value) > 2000
    ):
        return "/"
    return value


async def _bounded_body(request: Request) -> bytes:
    """The body, at most ``MAX_LOGIN_BODY`` bytes read within ``LOGIN_BODY_SECONDS`` (anyone
    may post here: a large or slow body costs it nothing)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_LOGIN_BODY:
        raise BadInput("the login request is too large")
    body = bytearray()
    try:
        async with asyncio.timeout(LOGIN_BODY_SECONDS):
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_LOGIN_BODY:
                    raise BadInput("the login request is too large")
    except TimeoutError:
        raise BadInput("the login request body did not arrive in time") from None
    return bytes(body)


async def _login_fields(request: Request) -> tuple[dict[str, str], bool]:
    """The posted fields and whether they came as JSON; ``BadInput`` for anything else."""
    body = await _bounded_body(request)
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind == "application/json":
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            raise BadInput("the login body is not JSON") from None
        if not isinstance(data, dict):
            raise BadInput('the login body must be {"token": "..."}')
        return {k: v for k, v in data.items() if isinstance(v, str)}, True
    if kind in ("application/x-www-form-urlencoded", ""):
        try:
            parsed = parse_qs(body.decode("utf-8"), keep_blank_values=True)
        except UnicodeDecodeError:
            raise BadInput("the login form is not UTF-8") from None
        return {k: v[0] for k, v in parsed.items() if v}, False
    raise BadInput("log in with a form (application/x-www-form-urlencoded) or JSON")


def login_page(
    request: Request, next_url: str = "/", error: str = "", status: int = 200
) -> Response:
    return TEMPLATES.TemplateResponse(
        request,
        "login.html",
        {"next": safe_next(next_url), "error": error},
        status_code=status,
        headers=PAGE_HEADERS,
    )


def login_router(
    get_tokens: Callable[[], auth.Tokens], sessions: Sessions, public_url: str = ""
) -> APIRouter:
    """``GET /login`` (the form), ``POST /login`` and ``POST /logout``; GET_TOKENS returns the
    ``auth.Tokens`` the server accepts."""
    router = APIRouter()

    @router.get("/login", include_in_schema=False, response_class=HTMLResponse)
    async def login_form(request: Request) -> Response:
        failed = request.query_params.get("error")
        error = "That token is not valid." if failed else ""
        return login_page(request, request.query_params.get("next", "/"), error)

    @router.post("/login", include_in_schema=False)
    async def login(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin and not same_origin(request, public_url):
            raise Forbidden("log in from this server's own pages")
        fields, as_json = await _login_fields(request)
        role = _role(fields.get("token", ""), get_tokens())
        target = safe_next(fields.get("next"))
        if role is None:
            if as_json:
                raise Unauthorized("invalid token")
            return login_page(request, target, "That token is not valid.", status=401)
        sid, found = sessions.create(role)
        response: Response
        if as_json:
            response = JSONResponse(
                {
                    "ok": True,
                    "role": role,
                    "readOnly": found.read_only,
                    "csrfToken": found.csrf_token,
                }
            )
        else:
            response = RedirectResponse(target, status_code=303)
        response.headers["Cache-Control"] = "no-store"
        response.set_cookie(
            COOKIE,
            sid,
            max_age=int(SESSION_SECONDS),
            path="/",
            httponly=True,
            samesite="strict",
            secure=_secure(request, public_url),
        )
        return response

    @router.post("/logout", include_in_schema=False)
    async def logout(request: Request) -> Response:
        sid = request.cookies.get(COOKIE, "")
        found = sessions.get(sid) if sid else None
        if found is not None:
            presented = request.headers.get(CSRF_HEADER)
            if presented is None:
                fields, _ = await _login_fields(request)
                presented = fields.get(CSRF_FIELD)
            if not csrf_ok(found, presented):
                raise CsrfFailed("log out with the page's CSRF token")
            sessions.drop(sid)
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(
            COOKIE, path="/", httponly=True, samesite="strict", secure=_secure(request, public_url)
        )
        return response

    return router


def _role(presented: str, tokens: auth.Tokens) -> str | None:
    # Compare against both tokens every time (no early exit telling which one was close).
    full = auth.equal(presented, tokens.full)
    read_only = auth.equal(presented, tokens.read_only)
    if not presented:
        return None
    return "full" if full else "read-only" if read_only else None
