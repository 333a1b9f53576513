"""API authentication: bearer tokens, a read-only token, and the generated loopback token.

Every non-webhook endpoint needs ``Authorization: Bearer <token>``. The read-only token may only
read (GET). On a loopback bind with no token configured, the daemon generates one into
``<stateDir>/api-token`` (mode 0600), which the CLI uses. A non-loopback bind without a token, or
with any configured token shorter than ``MIN_TOKEN_LENGTH`` characters, is refused at start.
Only real loopback addresses count as loopback: ``""`` and ``0.0.0.0`` bind every interface.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.context import Ctx
from the_loop.errors import BadInput, Forbidden, Unauthorized
from the_loop.instance import TOKEN_FILE, local_token

if TYPE_CHECKING:
    from fastapi import Request  # the CLI asks for its token without loading the web stack

MIN_TOKEN_LENGTH = 32
"""Off loopback every configured token (full and read-only) must be at least this long."""


@dataclass(frozen=True, slots=True)
class Tokens:
    full: str | None
    read_only: str | None


def is_loopback(host: str) -> bool:
    """True only for a real loopback address: ``localhost``, 127.0.0.0/8 or ``::1``.

    ``""``, ``0.0.0.0`` and ``::`` bind every interface and are not loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def token_file(state_dir: Path) -> Path:
    return state_dir / TOKEN_FILE


def check_bind(ctx: Ctx) -> None:
    """Refuse (``BadInput``) a bind off loopback without a full token, or with any configured
    token (full or read-only) shorter than ``MIN_TOKEN_LENGTH``; on loopback, nothing."""
    server = ctx.config.server
    if is_loopback(server.host):
        return
    where = f"{server.host!r}" if server.host else "'' (every interface)"
    full = os.environ.get(server.token_env) or None
    if full is None:
        raise BadInput(f"refusing to listen on {where} without a token: set ${server.token_env}")
    read_only = os.environ.get(server.read_only_token_env) or None
    for env, value in ((server.token_env, full), (server.read_only_token_env, read_only)):
        if value is not None and len(value) < MIN_TOKEN_LENGTH:
            raise BadInput(
                f"refusing to listen on {where}: ${env} is {len(value)} characters; off "
                f"loopback every token must be at least {MIN_TOKEN_LENGTH}"
            )


def ensure_tokens(ctx: Ctx) -> Tokens:
    """The tokens the server accepts; generates the loopback token file when needed.

    Raises ``BadInput`` when ``check_bind`` refuses the bind."""
    check_bind(ctx)
    server = ctx.config.server
    full = os.environ.get(server.token_env) or None
    read_only = os.environ.get(server.read_only_token_env) or None
    if full is None:
        full = _generated_token(ctx.state_dir)
    return Tokens(full, read_only)


def _generated_token(state_dir: Path) -> str:
    path = token_file(state_dir)
    try:
        existing = path.read_text("utf-8").strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    token = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(token + "\n")
    os.chmod(path, 0o600)
    return token


def client_token(ctx: Ctx) -> str | None:
    """The token a local client (CLI, SDK over HTTP) should present."""
    return local_token(ctx.config.server.token_env, ctx.state_dir)


def presented(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return None


def equal(a: str | None, b: str | None) -> bool:
    """Constant-time equality of two tokens; False when either is missing."""
    return a is not None and b is not None and hmac.compare_digest(a.encode(), b.encode())


def check(request: Request, tokens: Tokens, write: bool) -> str:
    """Return ``full`` or ``read-only`` for a valid token; raise 401/403 otherwise."""
    given = presented(request)
    if given is None:
        raise Unauthorized("missing bearer token (Authorization: Bearer <token>)")
    if equal(given, tokens.full):
        return "full"
    if equal(given, tokens.read_only):
        if write:
            raise Forbidden("the read-only token cannot change anything")
        return "read-only"
    raise Unauthorized("invalid token")
