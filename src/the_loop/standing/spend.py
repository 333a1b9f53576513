"""Budgets and idle suspend of standing sessions: the spend policy of ``work_items.spend``
for agents that own no work item (registered with the agent layer by ``standing.kind``).

A standing session's hold (``over-budget`` or ``suspended``) is kept in the ``spend`` table under
its agent key ``standing:NAME``; its record stays ``running`` (the-loop started the tmux session
and still owns it: the pane is dead on purpose, kept with its history).

- **Budgets** (``budgets.perSessionUsd`` — everything the standing session spent, all its
  conversations —, ``maxTurns`` and ``perDayUsd``; each raised by ``standing extend``) are
  checked when its turn has ended (attention ``waiting``, nothing pending): the harness is
  terminated, ``standing.over_budget`` and one notice in its bound Slack thread. Further
  ``say`` is refused naming the budget and ``the-loop standing extend NAME``; ``start`` and
  ``restart`` too. A stop keeps the hold; ``extend`` lifts it and resumes the conversation.
- **Idle suspend**: waiting for ``sessions.suspendAfterMinutes`` suspends it
  (``standing.suspended``); the next ``say`` (or ``start``) resumes the same conversation and
  delivers the message once. A stop ends the suspension (it is then just stopped).

Never a session that is working, needs input or needs permission, and only a live pane that
carries the session's own mark. The standing verbs (``the_loop.standing.service``) call in here; the
daemon's spend pass calls ``standing_pass``.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import Agent, AgentKind
from the_loop.agent.spend import budgets, holds
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict
from the_loop.outbox import slack as slack_outbound
from the_loop.refs import standing_key, standing_target, validate_standing_name
from the_loop.standing.defs import Definition, StartKind, StartOutcome
from the_loop.store import attention as attention_store
from the_loop.store import prompts as queue
from the_loop.store import standing as store
from the_loop.store import usage as usage_store
from the_loop.store.standing import StandingRecord, StandingStatus

SOURCE = "spend"


def key_of(name: str) -> str:
    """The agent key of standing session NAME (its prompt queue, mark, usage and hold)."""
    return standing_key(name)


def locked(ctx: Ctx, name: str) -> ExitStack:
    """Hold the cross-process lock of standing session NAME (every verb on it takes it)."""
    return layer.hold(ctx, [f"standing-{validate_standing_name(name)}"])


def record_agent(rec: StandingRecord) -> Agent:
    """The agent of a record (for stop and the spend policy, which work from the records)."""
    return Agent(
        key=key_of(rec.name),
        kind=AgentKind.STANDING,
        harness=rec.harness or "",
        runner="tmux",
        cwd=Path(rec.cwd or "."),
        target=standing_target(rec.name),
        conversation_id=rec.conversation_id,
        label=f"standing session {rec.name}",
    )


def agent_of(defn: Definition, conversation: str | None) -> Agent:
    """The agent session of standing definition DEFN, as the agent-session layer sees it."""
    return Agent(
        key=key_of(defn.name),
        kind=AgentKind.STANDING,
        harness=defn.harness,
        runner="tmux",
        cwd=defn.cwd,
        target=defn.target,
        args=defn.args,
        conversation_id=conversation,
        label=f"standing session {defn.name}",
    )


def hold_of(ctx: Ctx, name: str) -> usage_store.Spend:
    return usage_store.get_spend(ctx.db.connect(), key_of(name))


def lift_hint(name: str) -> str:
    return f"`the-loop standing extend {name} --usd N` (or `--turns N`)"


def refuse_over_budget(ctx: Ctx, name: str) -> None:
    """Raise ``Conflict`` naming the budget and how to lift it when NAME is over budget."""
    spend = hold_of(ctx, name)
    if spend.hold == usage_store.OVER_BUDGET:
        raise Conflict(
            f"standing session {name} is over budget ({spend.hold_reason}); nothing is "
            f"delivered to it until its budget is raised with {lift_hint(name)}"
        )


def lift_suspended(ctx: Ctx, name: str, why: str) -> bool:
    """Lift NAME's suspension (it is about to be resumed); False when it was not suspended."""
    if hold_of(ctx, name).hold != usage_store.SUSPENDED:
        return False
    return holds.lift_agent(ctx, key_of(name), why, "standing.woken", standing=name)


def after_stop(ctx: Ctx, name: str) -> None:
    """NAME was stopped: a suspension ends there (it is just stopped now); over-budget stays
    until ``extend``."""
    _clear(ctx, name, usage_store.SUSPENDED, "stopped")


def forget(ctx: Ctx, name: str) -> None:
    """NAME's record was deleted: a suspension ends there; over-budget stays with the name, as
    its usage does (decision 0050: deleting and creating it again gives no new budget)."""
    _clear(ctx, name, usage_store.SUSPENDED, "deleted")


def held_start(ctx: Ctx, defn: Definition) -> StartOutcome | None:
    """A start of DEFN refused for its name's over-budget hold (naming how to lift it), as
    ``create`` answers it; None when it holds none."""
    try:
        refuse_over_budget(ctx, defn.name)
    except Conflict as exc:
        return StartOutcome(
            name=defn.name, outcome=StartKind.failed, target=defn.target, error=exc.message
        )
    return None


def _clear(ctx: Ctx, name: str, hold: str | None, why: str) -> None:
    """Drop NAME's hold (only HOLD, when given); its attention, held until now, is ``exited``."""
    key = key_of(name)
    with ctx.db.transaction() as tx:
        if usage_store.clear_hold(tx, key, hold):
            attention_store.set_state(
                tx, key, attention_store.EXITED, "spend", why, now=time.time(), source=SOURCE
            )


def suspended(ctx: Ctx, name: str) -> bool:
    return hold_of(ctx, name).hold == usage_store.SUSPENDED


@dataclass(frozen=True, slots=True)
class Grant:
    """What an extension did: the allowance now, the budget still reached (if any), whether
    the over-budget hold was lifted."""

    spend: usage_store.Spend
    still: str | None
    lifted: bool


def grant(ctx: Ctx, name: str, usd: float, turns: int) -> Grant:
    """Add USD and TURNS to NAME's allowance (its lock held); lift its over-budget hold when
    no budget is reached any more."""
    if usd < 0 or turns < 0 or (usd == 0 and turns == 0):
        raise BadInput("give a positive --usd N or --turns N")
    key = key_of(name)
    with ctx.db.transaction() as tx:
        spend = usage_store.extend(tx, key, usd, turns)
    still = budgets.reached(ctx, key, None)
    lifted = False
    if spend.hold == usage_store.OVER_BUDGET and still is None:
        lifted = holds.lift_agent(
            ctx, key, "the budget was extended", "standing.woken", standing=name
        )
    ev.emit(
        ctx.db,
        "standing.extended",
        source=SOURCE,
        standing=name,
        usd=usd,
        turns=turns,
        overBudget=still,
    )
    return Grant(usage_store.get_spend(ctx.db.connect(), key), still, lifted)


# --- stopping at the end of a turn ----------------------------------------------------------


def _stoppable(ctx: Ctx, name: str) -> tuple[StandingRecord, attention_store.Row] | None:
    """NAME's record and attention when it runs, holds nothing, and its turn has ended
    (``waiting``, nothing pending)."""
    conn = ctx.db.connect()
    rec = store.get(conn, name)
    key = key_of(name)
    if rec is None or rec.status is not StandingStatus.running or rec.started_at is None:
        return None
    if usage_store.get_spend(conn, key).hold is not None:
        return None
    row = attention_store.get(conn, key)
    if row is None or row.state != attention_store.WAITING or queue.pending(conn, key):
        return None
    return rec, row


def stop_over_budget(ctx: Ctx, name: str) -> str | None:
    """Stop NAME if its turn has ended and a budget is reached; the reason when it stopped."""
    key = key_of(name)
    with locked(ctx, name):
        found = _stoppable(ctx, name)
        reason = budgets.reached(ctx, key, None) if found is not None else None
        if found is None or reason is None:
            return None
        if not holds.stop(ctx, record_agent(found[0]), usage_store.OVER_BUDGET, reason):
            return None
        count = hold_of(ctx, name).holds
    ev.emit(
        ctx.db,
        "standing.over_budget",
        source=SOURCE,
        standing=name,
        session_id=found[0].conversation_id,
        reason=reason,
    )
    slack_outbound.queue_standing_budget_notice(
        ctx, name, reason, lift_hint(name), f"budget:{key}:{count}"
    )
    return reason


def suspend_idle(ctx: Ctx, name: str, now: float | None = None) -> bool:
    """Suspend NAME if it has been waiting (turn over, nothing pending) for
    ``sessions.suspendAfterMinutes``; True when it was."""
    limit = ctx.config.sessions.suspend_after_seconds
    if limit <= 0:
        return False
    now = time.time() if now is None else now
    with locked(ctx, name):
        found = _stoppable(ctx, name)
        if found is None or now - found[1].since < limit:
            return False
        idle = now - found[1].since
        reason = f"waiting {idle:.0f}s (sessions.suspendAfterMinutes)"
        if not holds.stop(ctx, record_agent(found[0]), usage_store.SUSPENDED, reason):
            return False
    ev.emit(
        ctx.db,
        "standing.suspended",
        source=SOURCE,
        standing=name,
        session_id=found[0].conversation_id,
        reason=reason,
        idleSeconds=round(idle, 3),
    )
    return True


def standing_pass(ctx: Ctx, checked: dict[str, float], changed: set[str], now: float) -> None:
    """The daemon's spend pass over the running standing sessions whose turn has ended:
    budgets first (once per turn end, or when new usage was read), then idle suspend.
    CHECKED keeps, per agent key, the turn end last checked."""
    conn = ctx.db.connect()
    suspend_after = ctx.config.sessions.suspend_after_seconds
    here = nodes.shared_name(ctx)  # only this node's agents
    for rec in store.list_records(conn):
        if nodes.elsewhere(here, rec.node):
            continue
        key = key_of(rec.name)
        row = attention_store.get(conn, key) if rec.status is StandingStatus.running else None
        if row is None or row.state != attention_store.WAITING:
            continue
        if checked.get(key) != row.since or key in changed:
            checked[key] = row.since
            if stop_over_budget(ctx, rec.name) is not None:
                continue
        if 0 < suspend_after <= now - row.since:
            suspend_idle(ctx, rec.name, now)
