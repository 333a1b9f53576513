"""The spend policy over ``Agent``, once for every kind of session: at the end of a turn
(attention ``waiting``, nothing pending) a budget reached stops the agent — hold
``over-budget``, harness terminated, pane and transcript kept, one notice —; else waiting for
``sessions.suspendAfterMinutes`` suspends it (hold ``suspended``). A headless run is a whole
turn: checked when it spent, never suspended. Never an agent that is working, needs input or
needs permission, and only a live pane that carries the agent's own mark. ``grant`` raises an
allowance and lifts an over-budget hold no budget holds any more.

What differs, each kind registers with ``on_spend`` (a ``SpendKind``):
``the_loop.work_items.spend``, ``the_loop.standing.spend``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import kinds
from the_loop.agent import node as nodes
from the_loop.agent.model import Agent, AgentKind
from the_loop.agent.spend import budgets, holds
from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.refs import standing_of
from the_loop.store import attention as attention_store
from the_loop.store import prompts as queue
from the_loop.store import usage as store

SOURCE = "spend"


@dataclass(frozen=True, slots=True)
class Spender:
    """A live agent as the spend policy sees it, built by its kind from its record."""

    agent: Agent
    node: str | None
    started: bool
    locks: tuple[str, ...]
    """The processing locks every verb on it takes."""
    work_item: str | None = None
    """Its item, whose budgets it shares; None for a standing session."""
    standing: str | None = None
    session_id: str | None = None
    """What its events name as ``session_id``."""

    @property
    def headless(self) -> bool:
        return self.agent.runner == "process"


@dataclass(frozen=True, slots=True)
class SpendKind:
    """What a kind of session registers with the spend policy (``on_spend``)."""

    events: str
    """The prefix of its events: ``EVENTS.over_budget``, ``.suspended``, ``.woken``,
    ``.extended``."""
    live: Callable[[Ctx], list[Spender]]
    """Its live agents (on every node), in the order they are checked."""
    fresh: Callable[[Ctx, str], Spender | None]
    """Agent KEY read again (under its locks); None when it is no longer live."""
    notice: Callable[[Ctx, Spender, str, int], None]
    """Tell the requester that the agent stopped for REASON (its COUNT-th stop)."""
    after: Callable[[Ctx], None] | None = None
    """What runs after every kind was checked (resumes waiting for memory, queued spawns)."""


@dataclass(frozen=True, slots=True)
class Grant:
    """What an extension did: the allowance now, the budget still reached (if any), whether
    the over-budget hold was lifted."""

    spend: store.Spend
    still: str | None
    lifted: bool


_KINDS: dict[AgentKind, SpendKind] = {}


def on_spend(kind: AgentKind, spend: SpendKind) -> None:
    """Register what the spend policy needs to know of sessions of KIND."""
    _KINDS[kind] = spend


def _kind(kind: AgentKind) -> SpendKind:
    kinds.load()
    return _KINDS[kind]


# --- the pass -------------------------------------------------------------------------------


def check(ctx: Ctx, checked: dict[str, float], changed: set[str], now: float) -> None:
    """Every kind's part of a spend pass, then what each runs after. CHECKED keeps, per agent
    key, the turn end last checked; CHANGED are the agents whose usage was read in this pass."""
    kinds.load()
    registered = list(_KINDS.values())
    for kind in registered:
        _check(ctx, kind, checked, changed, now)
    for kind in registered:
        if kind.after is not None:
            kind.after(ctx)


def _check(
    ctx: Ctx, kind: SpendKind, checked: dict[str, float], changed: set[str], now: float
) -> None:
    """KIND's agents of this node: at each turn end (or new usage), budgets, then idle
    suspend; a headless run is a whole turn, checked when it spent."""
    suspend_after = ctx.config.sessions.suspend_after_seconds
    spenders = kind.live(ctx)
    rows = attention_store.rows(ctx.db.connect(), [s.agent.key for s in spenders])
    waiting = {row.agent: row for row in rows if row.state == attention_store.WAITING}
    here = nodes.shared_name(ctx)
    for spender in spenders:
        key = spender.agent.key
        if nodes.elsewhere(here, spender.node):
            continue  # another node's agent: its own spend pass stops or suspends it
        if spender.headless:
            if key in changed:
                stop_over_budget(ctx, spender)
            continue
        row = waiting.get(key)
        if row is None:
            continue
        if checked.get(key) != row.since or key in changed:
            checked[key] = row.since
            if stop_over_budget(ctx, spender) is not None:
                continue
        if 0 < suspend_after <= now - row.since:
            suspend_idle(ctx, spender, now)


# --- stopping at the end of a turn ----------------------------------------------------------


def _stoppable(
    ctx: Ctx, kind: SpendKind, key: str
) -> tuple[Spender, attention_store.Row | None] | None:
    """Agent KEY read again, with its attention row, when it may be stopped: live, started,
    holding nothing, and under tmux its pane there and its turn over (``waiting``, nothing
    pending); a headless agent has no row."""
    fresh = kind.fresh(ctx, key)
    conn = ctx.db.connect()
    if fresh is None or not fresh.started or store.get_spend(conn, key).hold is not None:
        return None
    if fresh.headless:
        return fresh, None
    row = attention_store.get(conn, key)
    if fresh.agent.target is None or row is None or row.state != attention_store.WAITING:
        return None
    return None if queue.pending(conn, key) else (fresh, row)


def stop_over_budget(ctx: Ctx, spender: Spender) -> str | None:
    """Stop SPENDER if its turn has ended and a budget is reached; the reason when it
    stopped."""
    kind, key = _kind(spender.agent.kind), spender.agent.key
    with layer.hold(ctx, list(spender.locks)):
        found = _stoppable(ctx, kind, key)
        if found is None:
            return None
        fresh = found[0]
        reason = budgets.reached(ctx, key, fresh.work_item)
        if reason is None:
            return None
        if not holds.stop(ctx, fresh.agent, store.OVER_BUDGET, reason, headless=fresh.headless):
            return None
        count = store.get_spend(ctx.db.connect(), key).holds
    _report(ctx, kind, fresh, "over_budget", reason=reason)
    kind.notice(ctx, fresh, reason, count)
    return reason


def suspend_idle(ctx: Ctx, spender: Spender, now: float | None = None) -> bool:
    """Suspend SPENDER if it has been waiting (turn over, nothing pending) for
    ``sessions.suspendAfterMinutes``, counted from its last delivered prompt when that came
    later (a harness read from its screen reads ``working`` only once its pane shows the turn,
    a moment after the paste); True when it was."""
    limit = ctx.config.sessions.suspend_after_seconds
    if limit <= 0:
        return False
    now = time.time() if now is None else now
    kind = _kind(spender.agent.kind)
    with layer.hold(ctx, list(spender.locks)):
        found = _stoppable(ctx, kind, spender.agent.key)
        fresh, row = found if found is not None else (spender, None)
        if row is None:
            return False
        idle = now - max(row.since, queue.last_delivered(ctx.db.connect(), spender.agent.key))
        if idle < limit:
            return False
        reason = f"waiting {idle:.0f}s (sessions.suspendAfterMinutes)"
        if not holds.stop(ctx, fresh.agent, store.SUSPENDED, reason):
            return False
    _report(ctx, kind, fresh, "suspended", reason=reason, idleSeconds=round(idle, 3))
    return True


def _report(ctx: Ctx, kind: SpendKind, spender: Spender, what: str, **payload: Any) -> None:
    """Emit KIND's event WHAT (``session.WHAT``, ``standing.WHAT``) naming SPENDER."""
    ev.emit(
        ctx.db,
        f"{kind.events}.{what}",
        source=SOURCE,
        work_item=spender.work_item,
        standing=spender.standing,
        session_id=spender.session_id,
        **payload,
    )


# --- extend ---------------------------------------------------------------------------------


def require_allowance(usd: float, turns: int) -> None:
    """Raise ``BadInput`` unless USD and TURNS give a positive extension."""
    if usd < 0 or turns < 0 or (usd == 0 and turns == 0):
        raise BadInput("give a positive --usd N or --turns N")


def grant(ctx: Ctx, agent: str, work_item: str | None, usd: float, turns: int) -> Grant:
    """Add USD and TURNS to AGENT's allowance (of WORK_ITEM, None for a standing session; its
    locks held); lift its over-budget hold when no budget is reached any more."""
    require_allowance(usd, turns)
    with ctx.db.transaction() as tx:
        spend = store.extend(tx, agent, usd, turns)
    still = budgets.reached(ctx, agent, work_item)
    lifted = False
    if spend.hold == store.OVER_BUDGET and still is None:
        lifted = holds.lift_agent(
            ctx,
            agent,
            "the budget was extended",
            f"{_kind(AgentKind.of(agent)).events}.woken",
            work_item=work_item,
            standing=standing_of(agent),
        )
    return Grant(spend, still, lifted)


def extended(
    ctx: Ctx, agent: str, work_item: str | None, usd: float, turns: int, still: str | None
) -> None:
    """Report that AGENT (of WORK_ITEM, None for a standing session) was given USD and TURNS,
    and the budget it still reaches (STILL)."""
    ev.emit(
        ctx.db,
        f"{_kind(AgentKind.of(agent)).events}.extended",
        source=SOURCE,
        work_item=work_item,
        standing=standing_of(agent),
        session_id=agent if work_item else None,
        usd=usd,
        turns=turns,
        overBudget=still,
    )
