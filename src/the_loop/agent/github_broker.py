"""The GitHub broker (SPEC §18): a confined agent's git and API calls get the operator's
authorization added on the way out, by the daemon; the token never enters the sandbox.

Inside the sandbox two loopback ports (``THE_LOOP_GIT_BROKER``, ``THE_LOOP_GITHUB_API``) are
carried by the forwarder to the daemon's egress socket like any other (``AGENT TOKEN git`` or
``AGENT TOKEN api``: the agent's hook token names its session and work item). Each connection
carries one plain-HTTP request, answered and closed:

- ``git``: Git's smart HTTP for the item's own repository only (``/<owner>/<repo>.git/…``),
  sent on to its real URL (the clone's ``origin``, else ``workspaces.cloneUrl``) with
  ``Authorization``. Fetching needs ``sandbox.github`` ``read`` or ``write``; pushing needs
  ``write``, and every ref a push updates must be the item's own branch (the commands at the
  head of the ``git-receive-pack`` request are read before anything is sent on).
- ``api``: the GitHub REST API (``github.apiUrl``) under ``/repos/<owner>/<repo>`` of the
  item only: reads with ``read`` or ``write``; with ``write`` also a comment on the item itself
  and a pull request from the item's branch, whose ``body`` gets the-loop's self-marker, so
  what an agent posts is never taken as work or as an operator's command. Nothing else
  (edits, deletions, GraphQL, other repositories) is sent on.

Every refusal answers ``403`` (JSON ``message``) and is a ``sandbox.credential_refused`` event
naming the session, the request and the reason, never the token.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import subprocess
import weakref
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from the_loop import events as ev
from the_loop.errors import BadInput
from the_loop.github.errors import GitHubTokenMissing
from the_loop.github.token import resolve_token
from the_loop.refs import WorkItemRef, branch_name, standing_of
from the_loop.work import mark

if TYPE_CHECKING:
    import httpx

    from the_loop.config import Config
    from the_loop.context import Ctx
    from the_loop.store.hook_tokens import HookToken

GIT, API = "git", "api"
MODES = (GIT, API)
HEAD_SECONDS = 30.0
UPSTREAM_SECONDS = 300.0
MAX_HEAD = 16 * 1024
MAX_GIT_BODY = 256 * 1024 * 1024
MAX_API_BODY = 1024 * 1024
ZERO = "0" * 40
HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "authorization",
        "content-length",
        "expect",
        "cookie",
    }
)
"""Headers never passed on (either way): hop-by-hop, and what the broker sets itself."""
_GIT_PATH = re.compile(r"\A/(?P<owner>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?(?P<rest>/.*)\Z")
_REPO_PATH = re.compile(r"\A/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)(?P<rest>/[^?]*)?\Z")


class Refused(Exception):
    """A request the broker does not send on; the reason is what the agent and the event say."""

    def __init__(self, reason: str, status: int = 403) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), "")


@dataclass(frozen=True, slots=True)
class Grant:
    """What one agent's brokered calls may reach: its item, the item's branch, the access
    ``sandbox.github`` gives, and where its repository and the API really are."""

    ref: WorkItemRef
    branch: str
    access: str
    git_url: str
    api_url: str


def grant_of(config: Config, who: HookToken) -> Grant:
    """The GRANT of the agent WHO (``Refused`` when it has none: a standing session, a local
    item, ``sandbox.github: none``)."""
    if config.sandbox.github == "none":
        raise Refused("sandbox.github is none")
    if who.work_item is None:
        raise Refused("not a work item's session (no repository of its own)")
    try:
        ref = WorkItemRef.parse(who.work_item)
    except BadInput:
        raise Refused("not a work item's session (no repository of its own)") from None
    if ref.is_local:
        raise Refused("a local work item has no repository on GitHub")
    return Grant(
        ref, branch_name(ref), config.sandbox.github, git_url(config, ref), config.github.api_url
    )


def git_url(config: Config, ref: WorkItemRef) -> str:
    """Where REF's repository really is: the configured clone's ``origin`` when it is an
    HTTP(S) URL, else ``workspaces.cloneUrl``."""
    clone = config.workspaces.repos.get(ref.full_name)
    if clone is not None:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            origin = subprocess.run(
                ["git", "-C", str(clone), "config", "--get", "remote.origin.url"],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout.strip()
            if origin.startswith(("http://", "https://")):
                return origin
    return config.workspaces.clone_url.format(host=ref.host, owner=ref.owner, repo=ref.repo)


def _same_repo(grant: Grant, owner: str, repo: str) -> bool:
    name = repo.removesuffix(".git")
    return owner.lower() == grant.ref.owner and name.lower() == grant.ref.repo


def check_git(grant: Grant, request: Request) -> str:
    """The upstream URL REQUEST (smart HTTP under ``/<owner>/<repo>.git``) goes to;
    ``Refused`` unless GRANT allows it."""
    found = _GIT_PATH.match(request.path)
    if found is None or not _same_repo(grant, found["owner"], found["repo"]):
        raise Refused(f"not the item's repository ({grant.ref.full_name})")
    rest, query = found["rest"], request.query
    service = {"service=git-upload-pack": "read", "service=git-receive-pack": "write"}
    if request.method == "GET" and rest == "/info/refs" and query in service:
        needs = service[query]
    elif request.method == "POST" and rest in ("/git-upload-pack", "/git-receive-pack"):
        needs = "read" if rest == "/git-upload-pack" else "write"
    else:
        raise Refused("only Git's smart HTTP is brokered")
    if needs == "write" and grant.access != "write":
        raise Refused(f"sandbox.github is {grant.access}: pushing is not allowed")
    if request.method == "POST" and needs == "write":
        refs = pushed_refs(_decoded(request))
        if refs is None:
            raise Refused("a push whose ref updates cannot be read")
        own = f"refs/heads/{grant.branch}"
        others = sorted({r for r in refs if r != own})
        if others:
            raise Refused(f"a push may update only {own}, not {', '.join(others)[:200]}")
    upstream = grant.git_url.rstrip("/")
    return f"{upstream}{rest}" + (f"?{query}" if query else "")


def pushed_refs(body: bytes) -> list[str] | None:
    """The refs a ``git-receive-pack`` request BODY updates (its pkt-line commands up to the
    flush); None when they cannot be read (a signed push included)."""
    refs: list[str] = []
    at = 0
    while at + 4 <= len(body):
        try:
            size = int(body[at : at + 4], 16)
        except ValueError:
            return None
        if size == 0:
            return refs
        if size < 5 or at + size > len(body):
            return None
        line = body[at + 4 : at + size].split(b"\0", 1)[0].rstrip(b"\n")
        at += size
        if line.startswith(b"shallow "):
            continue
        parts = line.split(b" ")
        if len(parts) != 3 or len(parts[0]) not in (40, 64):
            return None
        refs.append(parts[2].decode("utf-8", "replace"))
    return None


def _decoded(request: Request) -> bytes:
    """REQUEST's body, gunzipped when git sent it compressed (at most the first MiB: the
    commands come first)."""
    if request.header("content-encoding").lower() != "gzip":
        return request.body
    try:
        return zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(request.body, 1 << 20)
    except zlib.error:
        return b""


def check_api(grant: Grant, request: Request) -> tuple[str, bytes]:
    """The upstream URL and body of REQUEST (a REST call under the item's repository), the
    body of a post carrying the self-marker; ``Refused`` unless GRANT allows it."""
    found = _REPO_PATH.match(request.path)
    if not _plain_path(request.path):
        raise Refused("a path with dot segments or escapes is not brokered")
    if found is None or not _same_repo(grant, found["owner"], found["repo"]):
        raise Refused(f"only the item's repository ({grant.ref.full_name}) is brokered")
    rest = found["rest"] or ""
    body = request.body
    if request.method in ("GET", "HEAD"):
        pass
    elif request.method != "POST":
        raise Refused(f"{request.method} is not brokered (only reads, comments, pull requests)")
    elif grant.access != "write":
        raise Refused(f"sandbox.github is {grant.access}: posting is not allowed")
    elif rest == f"/issues/{grant.ref.number}/comments":
        body = _marked(body, required=True)
    elif rest == "/pulls":
        payload = _json(body)
        head = str(payload.get("head", ""))
        if head.rpartition(":")[2] != grant.branch:
            raise Refused(f"a pull request must come from the item's branch {grant.branch}")
        body = _marked(body, required=False)
    else:
        raise Refused(f"POST {rest or '/'} is not brokered (only a comment on the item)")
    upstream = grant.api_url.rstrip("/") + request.path
    return upstream + (f"?{request.query}" if request.query else ""), body


def _plain_path(path: str) -> bool:
    """True when PATH has no ``.``/``..`` segment and no escape or backslash that could become
    one on the way (``/repos/OWNER/REPO/../../user`` would leave the item's repository)."""
    return "%" not in path and "\\" not in path and not {".", ".."} & set(path.split("/"))


def _json(body: bytes) -> dict[str, object]:
    try:
        payload = json.loads(body or b"{}")
    except ValueError:
        raise Refused("the body is not JSON", 400) from None
    if not isinstance(payload, dict):
        raise Refused("the body is not a JSON object", 400)
    return payload


def _marked(body: bytes, *, required: bool) -> bytes:
    payload = _json(body)
    text = payload.get("body")
    if text is None and not required:
        text = ""
    if not isinstance(text, str) or (required and not text.strip()):
        raise Refused("a comment needs a text body", 400)
    payload["body"] = mark(text).strip()
    return json.dumps(payload).encode("utf-8")


# --- the connection --------------------------------------------------------------------------


async def serve(
    ctx: Ctx,
    who: HookToken,
    mode: str,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    """Answer the one request on READER from agent WHO (MODE ``git`` or ``api``)."""
    limit = MAX_GIT_BODY if mode == GIT else MAX_API_BODY
    try:
        request = await read_request(reader, writer, limit)
    except Refused as exc:
        await asyncio.to_thread(refused, ctx, who, mode, "?", str(exc))
        await _answer(writer, exc.status, str(exc))
        return
    try:
        url, body, auth = await asyncio.to_thread(_decide, ctx, who, mode, request)
    except Refused as exc:
        shown = f"{request.method} {request.path}"
        await asyncio.to_thread(refused, ctx, who, mode, shown, str(exc))
        await _answer(writer, exc.status, str(exc))
        return
    headers = [(k, v) for k, v in request.headers if k.lower() not in HOP]
    headers.append(("Authorization", auth))
    await _send_on(request.method, url, headers, body, writer)


def _decide(ctx: Ctx, who: HookToken, mode: str, request: Request) -> tuple[str, bytes, str]:
    """The upstream URL, body and ``Authorization`` of WHO's REQUEST; ``Refused`` when it is
    not to be sent on (blocking: a clone's origin and ``gh auth token`` may be asked)."""
    grant = grant_of(ctx.config, who)
    if mode == GIT:
        url, body = check_git(grant, request), request.body
        secret = base64.b64encode(b"x-access-token:" + _token(ctx).encode()).decode()
        return url, body, f"Basic {secret}"
    url, body = check_api(grant, request)
    return url, body, f"Bearer {_token(ctx)}"


def _token(ctx: Ctx) -> str:
    gh = ctx.config.github
    env = os.environ.get(gh.token_env, "").strip()
    if env:
        return env
    try:
        return resolve_token(gh.token_env, api_url=gh.api_url)
    except GitHubTokenMissing:
        raise Refused("the-loop has no GitHub token to add", 503) from None


async def _send_on(
    method: str,
    url: str,
    headers: list[tuple[str, str]],
    body: bytes,
    writer: asyncio.StreamWriter,
) -> None:
    import httpx  # lazy: start-up (every spawn loads this module; httpx is for brokered calls)

    try:
        async with _client().stream(method, url, headers=headers, content=body) as answer:
            head = [f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}"]
            head += [f"{k}: {v}" for k, v in answer.headers.multi_items() if k.lower() not in HOP]
            head.append("Connection: close")
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            async for chunk in answer.aiter_raw():
                writer.write(chunk)
                await writer.drain()
    except httpx.HTTPError as exc:
        await _answer(writer, 502, f"the upstream did not answer: {type(exc).__name__}")


_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def _client() -> httpx.AsyncClient:
    """The running loop's one client (made once: a client's TLS set-up costs milliseconds)."""
    import httpx  # lazy: start-up (as in _send_on)

    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        timeout = httpx.Timeout(UPSTREAM_SECONDS, connect=10.0)
        client = _clients[loop] = httpx.AsyncClient(timeout=timeout, trust_env=False)
    return client


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = json.dumps({"message": f"the-loop: {reason}"}).encode("utf-8") + b"\n"
    phrase = {400: "Bad Request", 403: "Forbidden", 413: "Too Large", 502: "Bad Gateway"}
    head = f"HTTP/1.1 {status} {phrase.get(status, 'Refused')}\r\nContent-Type: application/json"
    head += f"\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with contextlib.suppress(OSError):
        writer.write(head.encode("latin-1") + body)
        await writer.drain()


async def read_request(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, limit: int
) -> Request:
    """One HTTP/1.1 request from READER, its body whole (``Content-Length`` or chunked, at
    most LIMIT bytes; ``100 Continue`` sent when asked)."""
    try:
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        raise Refused("not an HTTP request", 400) from None
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise Refused("not an HTTP request", 400)
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep and name.strip():
            headers.append((name.strip(), value.strip()))
    target = urlsplit(parts[1])
    request = Request(parts[0].upper(), target.path or "/", target.query, headers, b"")
    if request.header("expect").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    body = await asyncio.wait_for(_body(reader, request, limit), UPSTREAM_SECONDS)
    return Request(request.method, request.path, request.query, headers, body)


async def _body(reader: asyncio.StreamReader, request: Request, limit: int) -> bytes:
    if "chunked" in request.header("transfer-encoding").lower():
        out = bytearray()
        while True:
            size = int((await reader.readline()).split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()).strip():
                    pass  # trailers
                return bytes(out)
            if len(out) + size > limit:
                raise Refused(f"a request body over {limit} bytes", 413)
            out += await reader.readexactly(size)
            await reader.readexactly(2)
    length = request.header("content-length")
    if not length:
        return b""
    if not length.isdigit():
        raise Refused("a bad Content-Length", 400)
    if int(length) > limit:
        raise Refused(f"a request body over {limit} bytes", 413)
    return await reader.readexactly(int(length))


def refused(ctx: Ctx, who: HookToken, mode: str, request: str, reason: str) -> None:
    """Log one ``sandbox.credential_refused``: the session, the request, the reason."""
    ev.emit(
        ctx.db,
        "sandbox.credential_refused",
        source="sandbox",
        work_item=who.work_item,
        standing=standing_of(who.agent),
        session_id=who.agent,
        agent=who.agent,
        broker=mode,
        request=request[:300],
        reason=reason[:300],
    )


# --- the agent's side ------------------------------------------------------------------------

GIT_ENV = "THE_LOOP_GIT_BROKER"
API_ENV = "THE_LOOP_GITHUB_API"
GIT_CONFIG = ".config/git/config"
"""Under the agent's home: git's own per-user file, written by the-loop at each spawn (the
agent's ``~/.gitconfig`` stays its own)."""


def agent_git_config(config: Config, work_item: str | None, git_port: int) -> str:
    """The git configuration of an agent of WORK_ITEM whose broker listens on GIT_PORT: its
    repository's URLs (HTTPS, SSH, the clone's) lead to the broker; the operator's name and
    e-mail, so that it can commit."""
    lines = ["# Written by the-loop at each spawn (SPEC §18): git reaches GitHub through it."]
    ref = None
    if work_item is not None:
        with contextlib.suppress(BadInput):
            ref = WorkItemRef.parse(work_item)
    if ref is not None and not ref.is_local:
        path = f"{ref.owner}/{ref.repo}"
        lines.append(f'[url "http://127.0.0.1:{git_port}/{path}"]')
        seen = [git_url(config, ref).removesuffix(".git")]
        seen += [f"https://{ref.host}/{path}", f"git@{ref.host}:{path}"]
        seen += [f"ssh://git@{ref.host}/{path}"]
        lines += [f"\tinsteadOf = {url}" for url in dict.fromkeys(seen)]
    identity = _operator_identity()
    if identity:
        lines.append("[user]")
        lines += [f"\t{key} = {value}" for key, value in identity.items()]
    return "\n".join(lines) + "\n"


def _operator_identity() -> dict[str, str]:
    """The operator's ``user.name`` and ``user.email`` from git's global configuration."""
    try:
        found = subprocess.run(
            ["git", "config", "--global", "--get-regexp", r"^user\.(name|email)$"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return {}
    out = {}
    for line in found.splitlines():
        key, _, value = line.partition(" ")
        if value.strip() and "\n" not in value and '"' not in value:
            out[key.removeprefix("user.")] = value.strip()
    return out
