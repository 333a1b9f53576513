"""The spend pass: the live agents' usage metered once, then each kind of session's budgets
and idle suspend (registered with ``on_spend``: ``the_loop.work_items.spend``,
``the_loop.standing.spend``), then what each kind does after (resumes waiting for memory,
queued spawns).

The daemon runs ``spend_loop``: a pass every ``attention.pollSeconds``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from the_loop.agent import kinds
from the_loop.agent.model import AgentKind
from the_loop.agent.spend import meter
from the_loop.context import Ctx
from the_loop.supervise import periodic

SpendCheck = Callable[[Ctx, dict[str, float], set[str], float], None]
"""A kind's budgets and idle suspend: (ctx, the turn end each agent was last checked at, the
agents whose usage changed in this pass, now)."""
After = Callable[[Ctx], None]

_CHECKS: dict[AgentKind, tuple[SpendCheck, After | None]] = {}


def on_spend(kind: AgentKind, check: SpendCheck, after: After | None = None) -> None:
    """Register how sessions of KIND are checked in a spend pass, and what runs after every
    kind was checked."""
    _CHECKS[kind] = (check, after)


# --- the daemon's pass ----------------------------------------------------------------------


@dataclass
class SpendWatch:
    """Between passes: the turn end (attention ``since``) each session was last checked at."""

    checked: dict[str, float] = field(default_factory=dict)


def spend_pass(ctx: Ctx, watch: SpendWatch, now: float | None = None) -> None:
    """One pass: meter, each kind's budgets and idle suspend, then what waits for memory."""
    kinds.load()
    now = time.time() if now is None else now
    agents = meter.live_agents(ctx)
    changed = set(meter.meter_agents(ctx, agents))
    meter.follow_codex_threads(ctx, agents)
    registered = list(_CHECKS.values())
    for check, _ in registered:
        check(ctx, watch.checked, changed, now)
    for _, after in registered:
        if after is not None:
            after(ctx)


async def spend_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's spend task: a pass every ``attention.pollSeconds`` until STOP."""
    watch = SpendWatch()
    await periodic(
        ctx,
        stop,
        "spend",
        lambda: spend_pass(ctx, watch),
        lambda: ctx.config.attention.poll_seconds,
    )
