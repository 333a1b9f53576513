"""The egress proxy (SPEC §18): the one way out of a confined agent's network namespace.

The daemon listens on ``<stateDir>/egress/proxy.sock``; the forwarder inside each sandbox
(``the_loop.runner.sandbox_forward``) carries the agent's loopback connections there, each
after one line ``AGENT TOKEN MODE``. The token is the agent's hook token (its hash is
checked like the hook channel's: a connection speaks only for its own session). MODE
``proxy``: an HTTP proxy request follows (``CONNECT host:port``, or a plain ``http://``
request, sent on in origin form); ``port:N``: straight to the host's ``127.0.0.1:N``;
``git`` / ``api``: the GitHub broker (``the_loop.agent.github_broker``). A
destination outside ``sandbox.allowHosts`` gets ``403`` (or the connection closed) and a
``sandbox.egress_refused`` event naming the host and the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from the_loop import events as ev
from the_loop.agent import github_broker
from the_loop.agent.attention.spawn import token_hash
from the_loop.harness import own_settings
from the_loop.refs import standing_of
from the_loop.runner import sandbox
from the_loop.store import hook_tokens

if TYPE_CHECKING:
    from the_loop.config import Config
    from the_loop.context import Ctx

NAME = "egress"
SOCKET = "proxy.sock"
PROXY_PORT = 3128
MAX_HEAD = 16 * 1024
HEAD_SECONDS = 10.0
CONNECT_SECONDS = 10.0
LOOPBACK = ("127.0.0.1", "localhost")
FIRST_UNPRIVILEGED_PORT = 1024
"""The lowest port an unprivileged process may listen on (``ip_unprivileged_port_start``)."""
MODEL_HOSTS = {
    "claude": ["api.anthropic.com", "statsig.anthropic.com", "console.anthropic.com"],
    "codex": ["api.openai.com", "chatgpt.com", "auth.openai.com"],
    "gemini": [
        "generativelanguage.googleapis.com",
        "cloudcode-pa.googleapis.com",
        "oauth2.googleapis.com",
    ],
}
_BASE_URLS = ("ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GOOGLE_GEMINI_BASE_URL")

log = logging.getLogger("the_loop.agent.egress")


def egress_dir(state_dir: Path) -> Path:
    return state_dir / "egress"


def allow_hosts(config: Config) -> list[str]:
    """``sandbox.allowHosts``, or its default: the model APIs of the configured harnesses (and
    the hosts their ``*_BASE_URL`` name, in their ``env``, else the daemon's environment, or
    in the operator's own settings files: ``own_settings.model_urls``) and the GitHub host and
    API host."""
    if config.sandbox.allow_hosts is not None:
        return list(config.sandbox.allow_hosts)
    hosts: list[str] = []
    names = {config.routing.default_harness, *config.harnesses}
    for name in sorted(names):
        harness = config.harness(name)
        hosts += MODEL_HOSTS.get(harness.adapter or name, [])
        for variable in _BASE_URLS:  # as the agent gets it: its harness's env, else ours
            url = harness.env.get(variable) or os.environ.get(variable)
            if url:
                hosts.append(_netloc(url))
        hosts += [
            _netloc(url) for url in own_settings.model_urls(harness.adapter or name, harness.env)
        ]
    api = urlsplit(config.github.api_url)
    hosts += ["github.com", _netloc(config.github.api_url) if api.hostname else "api.github.com"]
    return sorted({h for h in hosts if h})


def mirrored_ports(hosts: list[str]) -> list[int]:
    """The loopback ports HOSTS allow (``127.0.0.1:N``, ``localhost:N``) that a sandbox
    mirrors on its own loopback: from ``FIRST_UNPRIVILEGED_PORT`` up (``unmirrored``)."""
    return [port for port in _loopback_ports(hosts) if port >= FIRST_UNPRIVILEGED_PORT]


def unmirrored(config: Config) -> str | None:
    """Why a confined agent cannot reach a loopback port CONFIG allows, None when it can
    reach them all. The forwarder inside the sandbox runs as an unprivileged user in its own
    network namespace, where only a privileged process may listen below 1024; such a port is
    left out (the agent's connection is refused) rather than failing the agent's start."""
    if config.sandbox.network != "allowlist" or sandbox.mode_of(config).mode != "bwrap":
        return None
    low = [p for p in _loopback_ports(allow_hosts(config)) if p < FIRST_UNPRIVILEGED_PORT]
    if not low:
        return None
    named = ", ".join(f"127.0.0.1:{port}" for port in low)
    return (
        f"a confined agent cannot reach {named}: a port below {FIRST_UNPRIVILEGED_PORT} cannot "
        "be mirrored inside its sandbox; serve it on a port from "
        f"{FIRST_UNPRIVILEGED_PORT} up, or set sandbox.network: open"
    )


def _loopback_ports(hosts: list[str]) -> list[int]:
    ports = []
    for host in hosts:
        name, _, port = host.rpartition(":")
        if name in LOOPBACK and port.isdigit():
            ports.append(int(port))
    return sorted(set(ports))


def allowed(hosts: list[str], host: str, port: int) -> bool:
    """True when HOST:PORT is in HOSTS (``name`` any port, ``name:port``, ``*.suffix``)."""
    host = host.lower().strip("[]")
    for entry in hosts:
        name, _, wanted = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if wanted and int(wanted) != port:
            continue
        if name == host or (name.startswith("*.") and host.endswith(name[1:])):
            return True
    return False


async def egress_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's egress proxy task, until STOP."""
    where = egress_dir(ctx.state_dir)
    where.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = where / SOCKET
    path.unlink(missing_ok=True)
    server = await asyncio.start_unix_server(
        lambda r, w: _serve(ctx, r, w), path=str(path), limit=MAX_HEAD
    )
    os.chmod(path, 0o600)
    try:
        await stop.wait()
    finally:
        server.close()
        with contextlib.suppress(OSError):
            path.unlink()


async def _serve(ctx: Ctx, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        await _handle(ctx, reader, writer)
    except (OSError, ValueError, TimeoutError, asyncio.IncompleteReadError):
        pass
    finally:
        writer.close()


async def _handle(ctx: Ctx, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    first = await asyncio.wait_for(reader.readline(), HEAD_SECONDS)
    words = first.decode("utf-8", "replace").split()
    if len(words) != 3:
        return
    agent, token, mode = words
    who = await asyncio.to_thread(hook_tokens.lookup, ctx.db.connect(), token_hash(token))
    if who is None or who.agent != agent:
        return
    if mode in github_broker.MODES:
        await github_broker.serve(ctx, who, mode, reader, writer)
        return
    head = b""
    if mode.startswith("port:"):
        host, port = "127.0.0.1", int(mode.removeprefix("port:"))
    elif mode == "proxy":
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_SECONDS)
        parsed = _request(head)
        if parsed is None:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        host, port, head = parsed
    else:
        return
    hosts = allow_hosts(ctx.config)
    if not allowed(hosts, host, port):
        await asyncio.to_thread(_refused, ctx, who, f"{host}:{port}")
        if mode == "proxy":
            body = b"the-loop: host not in sandbox.allowHosts\n"
            writer.write(
                b"HTTP/1.1 403 Forbidden\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
            )
            await writer.drain()
        return
    up_reader, up_writer = await asyncio.wait_for(
        asyncio.open_connection(host, port), CONNECT_SECONDS
    )
    if head.startswith(b"CONNECT "):
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
    elif head:
        up_writer.write(head)
    await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))


def _refused(ctx: Ctx, who: hook_tokens.HookToken, host: str) -> None:
    ev.emit(
        ctx.db,
        "sandbox.egress_refused",
        source="sandbox",
        work_item=who.work_item,
        standing=standing_of(who.agent),
        session_id=who.agent,
        agent=who.agent,
        host=host,
        reason="not in sandbox.allowHosts",
    )


def _request(head: bytes) -> tuple[str, int, bytes] | None:
    """HOST, PORT and the head to send on, from a proxy request's HEAD."""
    line, _, rest = head.partition(b"\r\n")
    parts = line.decode("latin-1").split(" ")
    if len(parts) != 3:
        return None
    method, target, version = parts
    if method == "CONNECT":
        name, _, port = target.rpartition(":")
        return (name.strip("[]"), int(port), head) if port.isdigit() and name else None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    origin = f"{method} {path} {version}\r\n".encode("latin-1")
    return url.hostname, url.port or 80, origin + rest


async def _pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
    try:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            if dst.can_write_eof():
                dst.write_eof()


def _has_port(entry: str) -> bool:
    name, sep, port = entry.rpartition(":")
    return bool(sep and name and port.isdigit())


def _netloc(url: str) -> str:
    parts = urlsplit(url)
    if not parts.hostname:
        return ""
    return f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
