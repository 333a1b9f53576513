"""The ``server.limits`` section: what any client can make the daemon hold at once, and for how
long (SPEC §11; every bound and its default is listed in ``docs/security.md``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel


class LimitsConfig(BaseModel):
    """Bounds on connections, request bodies, logins and event streams."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
    )

    max_connections: int = Field(
        1000,
        ge=16,
        le=1_000_000,
        description=(
            "Open HTTP connections at once (lowered to the open-file limit minus 256). At the "
            "cap a new connection closes the oldest idle one; with none idle it gets 503."
        ),
    )
    idle_seconds: float = Field(
        5,
        gt=0,
        le=3600,
        description=(
            "A connection that sends nothing this long after it opens, or between requests "
            "(keep-alive), is closed."
        ),
    )
    header_seconds: float = Field(
        10, gt=0, le=3600, description="A request's head must arrive within this (else 408)."
    )
    body_seconds: float = Field(
        10, gt=0, le=3600, description="A request's body must arrive within this (else 408)."
    )
    api_body_bytes: int = Field(
        1024 * 1024,
        ge=1024,
        description="Largest body of an /api/v1 or /mcp request (else 413).",
    )
    login_body_bytes: int = Field(
        8192, ge=256, le=1024 * 1024, description="Largest body of POST /login (else 413)."
    )
    logins_per_minute_per_client: int = Field(
        30, ge=1, description="Login attempts one client address may make a minute (else 429)."
    )
    logins_per_minute: int = Field(
        600, ge=1, description="Login attempts all clients together may make a minute (else 429)."
    )
    full_logins: int = Field(
        200, ge=1, description="Dashboard logins kept with the full token (oldest forgotten)."
    )
    read_only_logins: int = Field(
        1000,
        ge=1,
        description=(
            "Dashboard logins kept with the read-only token (oldest forgotten; never evicts a "
            "full login)."
        ),
    )
    terminals: int = Field(
        64,
        ge=1,
        description=(
            "Browser terminals at once (each is a tmux client and a pty); beyond it the oldest "
            "read-only one ends, or the new one is refused when none is read-only."
        ),
    )
    terminals_per_session: int = Field(
        8, ge=1, description="Browser terminals on one session at once (same rule)."
    )
    event_streams: int = Field(
        256,
        ge=1,
        description=(
            "Server-sent event streams at once; beyond it the oldest read-only stream ends, or "
            "the new one is refused (503) when none is read-only."
        ),
    )
