"""The delivery gate of held sessions (``suspended``, ``over-budget``), used by every delivery.

A delivery into a session that is over budget is kept (its prompt stays queued, in order) and
not delivered until ``sessions extend`` lifts the hold. A delivery into a suspended session
wakes it: when admission lets it start, the hold is lifted and the delivery goes on, reviving
the agent with its conversation resumed; otherwise it waits in the queue (``dispatch.queued``
reason ``memory``) and the daemon resumes it once memory allows.

``stop`` and ``lift_agent`` put an agent on hold and take it off, for work-item and standing
sessions alike.

The hold follows the item (decision 0050): a new session of an item whose budgets are reached
(``item_over_budget``) is registered ``queued`` with the hold ``over-budget`` and not started
until ``sessions extend``; and whatever the item's closed sessions kept undelivered is carried
to it (``carry_over``), after its own first prompt.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import Agent
from the_loop.agent.spend import admission, budgets
from the_loop.context import Ctx
from the_loop.store import attention as attention_store
from the_loop.store import prompts as queue
from the_loop.store import usage as store
from the_loop.store.conn import Connection
from the_loop.store.sessions import SessionRecord

SOURCE = "spend"


class Gate(NamedTuple):
    """What the delivery gate decided: KEPT says what happened to a delivery that may not go
    on now (kept, or waiting for memory), None when it may; WOKE, that REC was suspended and
    its hold was lifted for this delivery: its harness was stopped on purpose, and starting
    it again is a wake, not the restart of an agent found gone."""

    kept: str | None = None
    woke: bool = False


def gate(ctx: Ctx, rec: SessionRecord, delivery_id: str | None) -> Gate:
    """Whether the delivery into REC may go on now (a suspended REC has been lifted and will
    be resumed by it; see ``Gate``)."""
    spend = store.get_spend(ctx.db.connect(), rec.id)
    if spend.hold is None:
        return Gate()
    if spend.hold == store.OVER_BUDGET:
        ev.emit(
            ctx.db,
            "session.held",
            source=SOURCE,
            delivery_id=delivery_id,
            work_item=rec.work_item,
            session_id=rec.id,
            reason=spend.hold_reason,
        )
        return Gate(f"kept for {rec.id} (over budget: {spend.hold_reason})")
    reason = admission.blocked(ctx)
    if reason is not None:
        with ctx.db.transaction() as tx:
            new = store.mark_waiting(tx, rec.id, time.time())
        if new:
            ev.emit(
                ctx.db,
                "dispatch.queued",
                source=SOURCE,
                delivery_id=delivery_id,
                work_item=rec.work_item,
                session_id=rec.id,
                reason="memory",
                kind="resume",
                detail=reason,
            )
        return Gate(f"queued for {rec.id} (resume waits for memory: {reason})")
    return Gate(woke=lift(ctx, rec, "a delivery wakes it"))


def item_over_budget(ctx: Ctx, work_item: str) -> str | None:
    """Which of WORK_ITEM's own budgets (every session together, with their extensions) is
    reached, None when none: a new session of it then waits, held, for ``extend``. The day's
    budget is left to the end of the new session's first turn, as for any spawn."""
    return budgets.reached(ctx, "", work_item, day=False)


def carry_over(tx: Connection, rec: SessionRecord, over: str | None) -> int:
    """In the transaction registering REC (a new session of its item): carry the prompts its
    item's closed sessions kept to it, and put it on hold ``over-budget`` when OVER says its
    item's budget is reached. Returns how many prompts were carried."""
    carried = queue.carry(tx, rec.work_item, rec.id)
    if over is not None:
        now = time.time()
        store.set_hold(tx, rec.id, store.OVER_BUDGET, over, now)
        attention_store.set_state(
            tx, rec.id, store.OVER_BUDGET, "spend", over, now=now, source=SOURCE
        )
    return carried


def lift(ctx: Ctx, rec: SessionRecord, why: str) -> bool:
    """Lift REC's hold (the agent is about to be resumed): its attention becomes ``working``.
    False when it had none."""
    return lift_agent(ctx, rec.id, why, "session.woken", work_item=rec.work_item)


def lift_agent(
    ctx: Ctx,
    agent: str,
    why: str,
    event: str,
    work_item: str | None = None,
    standing: str | None = None,
) -> bool:
    """Lift AGENT's hold and make its attention ``working``; report EVENT (for WORK_ITEM's
    session or STANDING session). False when it had none."""
    now = time.time()
    with ctx.db.transaction() as tx:
        spend = store.get_spend(tx, agent)
        if not store.clear_hold(tx, agent):
            return False
        attention_store.set_state(
            tx, agent, attention_store.WORKING, "spend:resume", why, now=now, source=SOURCE
        )
    ev.emit(
        ctx.db,
        event,
        source=SOURCE,
        work_item=work_item,
        standing=standing,
        session_id=agent if work_item else None,
        hold=spend.hold,
        heldSeconds=round(now - (spend.held_at or now), 3),
    )
    return True


def stop(ctx: Ctx, agent: Agent, hold: str, reason: str, *, headless: bool = False) -> bool:
    """Put AGENT on HOLD for REASON and terminate its harness (its own live pane only; a
    HEADLESS agent has nothing running between deliveries). The hold is recorded before the
    harness is signalled (its exit hooks cannot race it) and undone when the terminate is
    refused or fails. False, with nothing changed, when it could not be stopped."""
    if not headless and (layer.probe(ctx, agent) != "live" or layer.owned(ctx, agent) is not True):
        return False
    now = time.time()
    with ctx.db.transaction() as tx:
        store.set_hold(tx, agent.key, hold, reason, now)
        attention_store.set_state(tx, agent.key, hold, "spend", reason, now=now, source=SOURCE)
    if headless:
        return True
    report = layer.terminate(ctx, agent)
    if report.refused or report.error:
        with ctx.db.transaction() as tx:
            store.clear_hold(tx, agent.key, hold)
            attention_store.set_state(
                tx,
                agent.key,
                attention_store.WAITING,
                "spend",
                "stop refused",
                now=now,
                source=SOURCE,
            )
        return False
    return True
