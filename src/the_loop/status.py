"""The daemon's health and the status summary, as every surface reports them.

``health`` runs the health checks (standing sessions, poller, inbox) into the one ``Health``
model (``the_loop.health``); ``status_summary`` adds the sessions by status and the inbox
depth.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from the_loop import __version__, outbox, standing
from the_loop.context import Ctx
from the_loop.health import Health
from the_loop.store import inbox
from the_loop.store.poll import last_cycle
from the_loop.store.sessions import counts_by_status


class Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class StatusSummary(Camel):
    """The health, sessions by status and inbox items by status."""

    health: Health
    sessions: dict[str, int]
    inbox: dict[str, int]


HealthCheck = Callable[[Ctx], tuple[list[str], Any]]


def _standing_health(ctx: Ctx) -> tuple[list[str], Any]:
    views = standing.list_standing(ctx)
    return standing.health_problems(ctx), {v.name: v.status for v in views}


def _poller_health(ctx: Ctx) -> tuple[list[str], Any]:
    if not (ctx.config.github.enabled and ctx.config.github.poller.enabled):
        return [], None
    cycle = last_cycle(ctx.db)
    return [], cycle.model_dump(by_alias=True) if cycle else {"lastCycle": None}


def _inbox_health(ctx: Ctx) -> tuple[list[str], Any]:
    return [], inbox.counts(ctx.db)


def _outbox_health(ctx: Ctx) -> tuple[list[str], Any]:
    return [], outbox.summary(ctx).model_dump(by_alias=True)


HEALTH_CHECKS: list[tuple[str, HealthCheck]] = [
    ("standing", _standing_health),
    ("poller", _poller_health),
    ("inbox", _inbox_health),
    ("outbox", _outbox_health),
]
"""Each check returns (problems, figures); empty figures are left out of ``detail``."""


def health(ctx: Ctx) -> Health:
    """The health of the installation CTX serves: ok unless a check reports a problem."""
    problems: list[str] = []
    detail: dict[str, Any] = {}
    for name, check in HEALTH_CHECKS:
        found, info = check(ctx)
        problems += found
        if info:
            detail[name] = info
    return Health(
        status="ok" if not problems else "unhealthy",
        version=__version__,
        problems=problems,
        detail=detail,
    )


def status_summary(ctx: Ctx) -> StatusSummary:
    """Health, sessions by status and inbox depth (what ``GET /api/v1/status`` answers)."""
    return StatusSummary(
        health=health(ctx),
        sessions=counts_by_status(ctx.db.connect()),
        inbox=inbox.counts(ctx.db),
    )
