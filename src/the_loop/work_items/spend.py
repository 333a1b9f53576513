"""The spend policy of work-item sessions: budgets, idle suspend, and the resumes and spawns
waiting for memory. Registered with the agent layer's spend pass (``agent.spend.service``).

The daemon runs ``agent.spend.service.spend_loop``; each pass:

1. reads the live agents' new usage (``agent.spend.meter``), and the thread an interactive Codex
   runs;
2. for each work-item session whose turn has ended (attention ``waiting``): a budget reached
   (``budgets.perSessionUsd``, ``perWorkItemUsd``, ``perDayUsd``, ``maxTurns``, each lifted by
   the session's extensions) stops it — hold ``over-budget``, harness terminated, pane and
   transcript kept, one notice on the ticket; else, waiting for ``sessions.suspendAfterMinutes``
   suspends it (hold ``suspended``). Never a session that is working, needs input or needs
   permission, and only a live pane that carries the session's own mark;
   standing sessions the same (``the_loop.standing.spend``), their notice in Slack;
3. resumes the suspended sessions whose delivery waited for memory, oldest first, then starts
   the queued spawns (FIFO) while admission lets them.

``extend`` (``the-loop sessions extend``, ``POST /api/v1/sessions/{id}/extend``) raises a
session's allowance and, when it is no longer over budget, resumes its conversation and
delivers what was kept.
"""

from __future__ import annotations

import time

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import AgentKind
from the_loop.agent import node as nodes
from the_loop.agent.spend import budgets, holds, usage
from the_loop.agent.spend import service as layer_spend
from the_loop.agent.spend.service import SpendWatch as SpendWatch
from the_loop.agent.spend.service import spend_pass as spend_pass
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict, NotRunning
from the_loop.outbox import drain as outbox
from the_loop.outbox import slack as slack_outbound
from the_loop.refs import WorkItemRef
from the_loop.store import attention as attention_store
from the_loop.store import prompts as queue
from the_loop.store import sessions as session_store
from the_loop.store import usage as store
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.wire import Wire
from the_loop.work_items import service as sessions
from the_loop.work_items.records import resolve

SOURCE = "spend"


class Extended(Wire):
    """What ``extend`` did: the allowance now, whether the hold was lifted, and how."""

    session_id: str
    work_item: str
    extra_usd: float
    extra_turns: int
    over_budget: str | None = None
    """Still over budget (why), so still held; None when the session runs again."""
    resumed: str | None = None
    usage: store.Usage


# --- budgets --------------------------------------------------------------------------------


def over_budget(ctx: Ctx, rec: SessionRecord) -> str | None:
    """Which budget REC has reached (with its extensions), None when none."""
    return budgets.reached(ctx, rec.id, rec.work_item)


# --- stopping at the end of a turn ----------------------------------------------------------


def _turn_ended(ctx: Ctx, rec: SessionRecord) -> attention_store.Row | None:
    """REC's attention row when its turn has ended (``waiting``) and nothing is pending."""
    conn = ctx.db.connect()
    row = attention_store.get(conn, rec.id)
    if row is None or row.state != attention_store.WAITING or queue.pending(conn, rec.id):
        return None
    return row


def _stop(ctx: Ctx, rec: SessionRecord, hold: str, reason: str) -> bool:
    """Put REC on HOLD and terminate its harness (see ``holds.stop``)."""
    return holds.stop(ctx, sessions.agent_of(rec), hold, reason, headless=rec.runner == "process")


def _notice(ctx: Ctx, rec: SessionRecord, reason: str, count: int) -> None:
    """One marked comment on REC's ticket for its COUNT-th stop, then the other channels."""
    if ctx.config.github.enabled:
        ref = WorkItemRef.parse(rec.work_item)
        text = (
            f"The agent of this item stopped at the end of its turn: {reason}. Further "
            "comments are kept and delivered once its budget is raised with "
            f"`the-loop sessions extend {rec.work_item} --usd N` (or `--turns N`)."
        )
        key = outbox.text_key("github", str(ref), "budget", rec.id, str(count))
        with ctx.db.transaction() as tx:
            outbox.enqueue_comment(tx, ref, text, what="budget", key=key)
        outbox.wake(ctx)
    slack_outbound.queue_budget_notice(ctx, rec.work_item, reason, f"budget:{rec.id}:{count}")


def stop_over_budget(ctx: Ctx, rec: SessionRecord) -> str | None:
    """Stop REC if its turn has ended and a budget is reached; the reason when it stopped."""
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        fresh = session_store.get(ctx.db.connect(), rec.id)
        if fresh is None or not _stoppable(ctx, fresh):
            return None
        if fresh.runner == "tmux" and _turn_ended(ctx, fresh) is None:
            return None
        reason = over_budget(ctx, fresh)
        if reason is None or not _stop(ctx, fresh, store.OVER_BUDGET, reason):
            return None
        count = store.get_spend(ctx.db.connect(), rec.id).holds
    ev.emit(
        ctx.db,
        "session.over_budget",
        source=SOURCE,
        work_item=rec.work_item,
        session_id=rec.id,
        reason=reason,
    )
    _notice(ctx, rec, reason, count)
    return reason


def suspend_idle(ctx: Ctx, rec: SessionRecord, now: float | None = None) -> bool:
    """Suspend REC if it has been waiting (turn over, nothing pending) for
    ``sessions.suspendAfterMinutes``; True when it was."""
    limit = ctx.config.sessions.suspend_after_seconds
    if limit <= 0:
        return False
    now = time.time() if now is None else now
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        fresh = session_store.get(ctx.db.connect(), rec.id)
        row = (
            _turn_ended(ctx, fresh)
            if fresh is not None and fresh.runner == "tmux" and _stoppable(ctx, fresh)
            else None
        )
        if fresh is None or row is None or now - row.since < limit:
            return False
        idle = now - row.since
        reason = f"waiting {idle:.0f}s (sessions.suspendAfterMinutes)"
        if not _stop(ctx, fresh, store.SUSPENDED, reason):
            return False
    ev.emit(
        ctx.db,
        "session.suspended",
        source=SOURCE,
        work_item=rec.work_item,
        session_id=rec.id,
        reason=reason,
        idleSeconds=round(idle, 3),
    )
    return True


def _stoppable(ctx: Ctx, rec: SessionRecord) -> bool:
    live = rec.status in (SessionStatus.active, SessionStatus.paused)
    if not live or rec.started_at is None or (rec.runner == "tmux" and rec.tmux_target is None):
        return False
    return store.get_spend(ctx.db.connect(), rec.id).hold is None


# --- extend ---------------------------------------------------------------------------------


def extend(ctx: Ctx, ref_or_id: str, usd: float = 0.0, turns: int = 0) -> Extended:
    """Raise the allowance of REF_OR_ID's session by USD dollars and TURNS turns; when that
    lifts it over its budgets, resume its conversation and deliver what was kept."""
    if usd < 0 or turns < 0 or (usd == 0 and turns == 0):
        raise BadInput("give a positive --usd N or --turns N")
    rec = resolve(ctx, ref_or_id)
    queued = rec.status is SessionStatus.queued
    held = store.get_spend(ctx.db.connect(), rec.id).hold == store.OVER_BUDGET
    if not rec.live or (queued and not held):
        raise Conflict(f"session {rec.id} of {rec.work_item} is {rec.status.value}")
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        with ctx.db.transaction() as tx:
            spend = store.extend(tx, rec.id, usd, turns)
        still = over_budget(ctx, rec)
        resumed = None
        if spend.hold == store.OVER_BUDGET and still is None:
            holds.lift(ctx, rec, "the budget was extended")
            try:
                resumed = None if queued else sessions.wake(ctx, _fresh(ctx, rec), stopped=True)
            except NotRunning as exc:
                resumed = exc.message
    if queued and resumed is None and still is None:  # held at its spawn: it may start now
        sessions.start_queued(ctx)
        now = _fresh(ctx, rec)
        resumed = f"started {rec.id}" if now.started_at else f"queued {rec.id} (for a slot)"
    ev.emit(
        ctx.db,
        "session.extended",
        source=SOURCE,
        work_item=rec.work_item,
        session_id=rec.id,
        usd=usd,
        turns=turns,
        overBudget=still,
    )
    return Extended(
        session_id=rec.id,
        work_item=rec.work_item,
        extra_usd=spend.extra_usd,
        extra_turns=spend.extra_turns,
        over_budget=still,
        resumed=resumed,
        usage=usage.of_agent(ctx, rec.id),
    )


def _fresh(ctx: Ctx, rec: SessionRecord) -> SessionRecord:
    return session_store.get(ctx.db.connect(), rec.id) or rec


def resume_waiting(ctx: Ctx) -> list[str]:
    """Resume the suspended sessions whose delivery waited for memory, oldest first, while
    admission lets them; the sessions resumed."""
    done: list[str] = []
    for spend in store.waiting_resumes(ctx.db.connect()):
        rec = session_store.get(ctx.db.connect(), spend.agent)
        if rec is None or not rec.live:
            with ctx.db.transaction() as tx:
                store.clear_hold(tx, spend.agent)
            continue
        with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
            if holds.gate(ctx, rec, None) is not None:
                return done
            sessions.wake(ctx, rec, stopped=True)
        done.append(rec.id)
    return done


def spend_check(ctx: Ctx, checked: dict[str, float], changed: set[str], now: float) -> None:
    """The work-item sessions' part of a spend pass: at each turn end (or new usage), budgets,
    then idle suspend; a headless run is a whole turn, checked when it spent."""
    suspend_after = ctx.config.sessions.suspend_after_seconds
    conn = ctx.db.connect()
    waiting = {
        row.agent: row
        for row in attention_store.rows(conn)
        if row.state == attention_store.WAITING and row.work_item is not None
    }
    here = nodes.shared_name(ctx)
    for status in (SessionStatus.active, SessionStatus.paused):
        for rec in session_store.list_sessions(conn, status):
            if nodes.elsewhere(here, rec.node):
                continue  # another node's agent: its own spend pass stops or suspends it
            if rec.runner == "process":  # a headless run is a whole turn: check what it spent
                if rec.id in changed:
                    stop_over_budget(ctx, rec)
                continue
            row = waiting.get(rec.id)
            if row is None:
                continue
            if checked.get(rec.id) != row.since or rec.id in changed:
                checked[rec.id] = row.since
                if stop_over_budget(ctx, rec) is not None:
                    continue
            if 0 < suspend_after <= now - row.since:
                suspend_idle(ctx, rec, now)


def after_check(ctx: Ctx) -> None:
    """After every kind was checked: what waits for memory, then the queued spawns."""
    resume_waiting(ctx)
    sessions.start_queued(ctx)


layer_spend.on_spend(AgentKind.WORK_ITEM, spend_check, after_check)
