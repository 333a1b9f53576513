"""The spend pass: the live agents' usage metered once, then the spend policy over every kind
of session (``agent.spend.policy``: budgets and idle suspend, then what each kind does after —
resumes waiting for memory, queued spawns).

The daemon runs ``spend_loop``: a pass after a change of this process (at most every
``attention.pollSeconds``) and when the last pass said (``the_loop.pulse``, decision 0066).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from the_loop import events as ev
from the_loop.agent import kinds
from the_loop.agent.spend import meter, policy, usage
from the_loop.context import Ctx
from the_loop.pulse import Pulse, soonest
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store
from the_loop.store import usage as usage_store
from the_loop.store.sessions import SessionStatus
from the_loop.supervise import monitor

# --- the daemon's pass ----------------------------------------------------------------------


@dataclass
class SpendWatch:
    """Between passes: the turn end (attention ``since``) each session was last checked at,
    and the (agent, model) pairs already said to have no price."""

    checked: dict[str, float] = field(default_factory=dict)
    unpriced: set[tuple[str, str]] = field(default_factory=set)


def spend_pass(ctx: Ctx, watch: SpendWatch, now: float | None = None) -> float:
    """One pass: meter, each kind's budgets and idle suspend, then what waits for memory.
    Returns when the next pass is due with nothing happening (``time.time()``)."""
    kinds.load()
    now = time.time() if now is None else now
    agents = meter.live_agents(ctx)
    changed = set(meter.meter_agents(ctx, agents))
    warn_unpriced(ctx, watch, changed)
    meter.follow_codex_threads(ctx, agents)
    policy.check(ctx, watch.checked, changed, now)
    return next_due(ctx, set(agents), now)


def warn_unpriced(ctx: Ctx, watch: SpendWatch, agents: set[str]) -> None:
    """While a dollar budget is set, say once per agent and model (per daemon run) that a model
    one of AGENTS used has no price (``session.unpriced``): its tokens count no dollars, so
    that budget cannot stop the agent. ``budgets.prices`` gives it one."""
    usd = ctx.config.budgets.usd_budgets
    if not usd:
        return
    conn = ctx.db.connect()
    for agent in sorted(agents):
        for model in usage.of_agent(ctx, agent).unpriced_models:
            if (agent, model) in watch.unpriced:
                continue
            watch.unpriced.add((agent, model))
            standing = agent.startswith(attention_store.STANDING_PREFIX)
            rec = None if standing else session_store.get(conn, agent)
            ev.emit(
                ctx.db,
                "session.unpriced",
                source="spend",
                work_item=rec.work_item if rec is not None else None,
                standing=agent.removeprefix(attention_store.STANDING_PREFIX) if standing else None,
                session_id=None if standing else agent,
                model=model,
                budgets=", ".join(usd),
            )


def next_due(ctx: Ctx, live: set[str], now: float) -> float:
    """When a pass is due with nothing happening: now while a live agent works (its meters), a
    headless run is live, or a resume or a spawn waits for room; else when the first waiting
    agent's idle time ends (``sessions.suspendAfterMinutes``)."""
    conn = ctx.db.connect()
    rows = attention_store.rows(conn, sorted(live))  # the live agents' rows, not every one kept
    busy = any(row.state == attention_store.WORKING for row in rows)
    busy = busy or any(
        rec.runner == "process" and rec.id in live
        for rec in session_store.list_sessions(conn, SessionStatus.active)
    )
    busy = busy or bool(usage_store.waiting_resumes(conn))
    busy = busy or session_store.oldest_queued(conn) is not None
    suspend_after = ctx.config.sessions.suspend_after_seconds
    idle_ends = [
        row.since + suspend_after
        for row in rows
        if row.state == attention_store.WAITING and suspend_after > 0
    ]
    return now if busy else soonest(*(t for t in idle_ends if t > now))


async def spend_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's spend task: a pass after a change of this process (at most every
    ``attention.pollSeconds``) and when the last pass said (decision 0066), until STOP."""
    watch = SpendWatch()
    pulse = Pulse(ctx.db)
    progress = monitor(ctx, "spend")
    try:
        while True:
            began = pulse.begin()
            due = await asyncio.to_thread(spend_pass, ctx, watch)
            progress.progressed()
            if await pulse.wait(stop, began, due, ctx.config.attention.poll_seconds):
                return
    finally:
        pulse.close()
