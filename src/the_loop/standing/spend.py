"""Budgets and idle suspend of standing sessions: what they register with the spend policy
(``agent.spend.policy``, by ``standing.kind``) and what their verbs ask of it.

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

The standing verbs (``the_loop.standing.service``) call in here.
"""

from __future__ import annotations

import time
from contextlib import ExitStack
from pathlib import Path

from the_loop import agent as layer
from the_loop.agent import Agent, AgentKind
from the_loop.agent.spend import holds, policy
from the_loop.context import Ctx
from the_loop.errors import Conflict
from the_loop.outbox import slack as slack_outbound
from the_loop.refs import standing_key, standing_of, standing_target, validate_standing_name
from the_loop.standing.defs import Definition, StartKind, StartOutcome
from the_loop.store import attention as attention_store
from the_loop.store import standing as store
from the_loop.store import usage as usage_store
from the_loop.store.standing import StandingRecord, StandingStatus

SOURCE = "spend"


def key_of(name: str) -> str:
    """The agent key of standing session NAME (its prompt queue, mark, usage and hold)."""
    return standing_key(name)


def lock_of(name: str) -> str:
    """The cross-process lock of standing session NAME (every verb on it takes it)."""
    return f"standing-{validate_standing_name(name)}"


def locked(ctx: Ctx, name: str) -> ExitStack:
    """Hold the cross-process lock of standing session NAME."""
    return layer.hold(ctx, [lock_of(name)])


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


# --- what the spend policy knows of them ---------------------------------------------------


def _spender(rec: StandingRecord) -> policy.Spender:
    return policy.Spender(
        agent=record_agent(rec),
        node=rec.node,
        started=rec.started_at is not None,
        locks=(lock_of(rec.name),),
        standing=rec.name,
        session_id=rec.conversation_id,
    )


def _live(ctx: Ctx) -> list[policy.Spender]:
    """The running standing sessions."""
    records = store.list_records(ctx.db.connect())
    return [_spender(rec) for rec in records if rec.status is StandingStatus.running]


def _read(ctx: Ctx, key: str) -> policy.Spender | None:
    rec = store.get(ctx.db.connect(), standing_of(key) or key)
    return _spender(rec) if rec is not None and rec.status is StandingStatus.running else None


def _notice(ctx: Ctx, spender: policy.Spender, reason: str, count: int) -> None:
    """One reply in the bound Slack thread for the COUNT-th stop."""
    name = spender.standing or ""
    key = f"budget:{spender.agent.key}:{count}"
    slack_outbound.queue_standing_budget_notice(ctx, name, reason, lift_hint(name), key)


KIND = policy.SpendKind(events="standing", live=_live, fresh=_read, notice=_notice)
"""What the spend policy knows of standing sessions (registered by ``standing.kind``)."""
