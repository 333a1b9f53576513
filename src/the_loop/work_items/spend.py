"""What work-item sessions register with the spend policy (``agent.spend.policy``): their
live sessions and their items' locks, budgets that follow the item, ``session.*`` events, the
notice of a stop on the ticket (and in a bound Slack thread); and after every kind was checked,
the resumes waiting for memory, oldest first, then the queued spawns (FIFO) while admission lets
them.

``extend`` (``the-loop sessions extend``, ``POST /api/v1/sessions/{id}/extend``) raises a
session's allowance and, when it is no longer over budget, resumes its conversation and
delivers what was kept.
"""

from __future__ import annotations

from the_loop import agent as layer
from the_loop.agent.spend import budgets, holds, policy, usage
from the_loop.agent.spend.service import SpendWatch as SpendWatch
from the_loop.agent.spend.service import spend_pass as spend_pass
from the_loop.context import Ctx
from the_loop.errors import Conflict, NotRunning
from the_loop.outbox import drain as outbox
from the_loop.outbox import slack as slack_outbound
from the_loop.refs import WorkItemRef
from the_loop.store import sessions as session_store
from the_loop.store import usage as store
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.wire import Wire
from the_loop.work_items import service as sessions
from the_loop.work_items.records import resolve

LIVE = (SessionStatus.active, SessionStatus.paused)


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


# --- what the spend policy knows of them ---------------------------------------------------


def _notice(ctx: Ctx, spender: policy.Spender, reason: str, count: int) -> None:
    """One marked comment on the ticket for the COUNT-th stop, then the other channels."""
    work_item, agent = spender.work_item or "", spender.agent.key
    if ctx.config.github.enabled:
        ref = WorkItemRef.parse(work_item)
        text = (
            f"The agent of this item stopped at the end of its turn: {reason}. Further "
            "comments are kept and delivered once its budget is raised with "
            f"`the-loop sessions extend {work_item} --usd N` (or `--turns N`)."
        )
        key = outbox.text_key("github", str(ref), "budget", agent, str(count))
        with ctx.db.transaction() as tx:
            outbox.enqueue_comment(tx, ref, text, what="budget", key=key)
        outbox.wake(ctx)
    slack_outbound.queue_budget_notice(ctx, work_item, reason, f"budget:{agent}:{count}")


def _spender(rec: SessionRecord) -> policy.Spender:
    return policy.Spender(
        agent=sessions.agent_of(rec),
        node=rec.node,
        started=rec.started_at is not None,
        locks=(WorkItemRef.parse(rec.work_item).slug,),
        work_item=rec.work_item,
        session_id=rec.id,
    )


def _live(ctx: Ctx) -> list[policy.Spender]:
    """The active, then the paused sessions."""
    conn = ctx.db.connect()
    return [_spender(rec) for status in LIVE for rec in session_store.list_sessions(conn, status)]


def _read(ctx: Ctx, key: str) -> policy.Spender | None:
    rec = session_store.get(ctx.db.connect(), key)
    return _spender(rec) if rec is not None and rec.status in LIVE else None


# --- extend ---------------------------------------------------------------------------------


def extend(ctx: Ctx, ref_or_id: str, usd: float = 0.0, turns: int = 0) -> Extended:
    """Raise the allowance of REF_OR_ID's session by USD dollars and TURNS turns; when that
    lifts it over its budgets, resume its conversation and deliver what was kept."""
    policy.require_allowance(usd, turns)
    rec = resolve(ctx, ref_or_id)
    queued = rec.status is SessionStatus.queued
    held = store.get_spend(ctx.db.connect(), rec.id).hold == store.OVER_BUDGET
    if not rec.live or (queued and not held):
        raise Conflict(f"session {rec.id} of {rec.work_item} is {rec.status.value}")
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        done = policy.grant(ctx, rec.id, rec.work_item, usd, turns)
        still, resumed = done.still, None
        if done.lifted:
            try:
                resumed = None if queued else sessions.wake(ctx, _fresh(ctx, rec), stopped=True)
            except NotRunning as exc:
                resumed = exc.message
    if queued and resumed is None and still is None:  # held at its spawn: it may start now
        sessions.start_queued(ctx)
        now = _fresh(ctx, rec)
        resumed = f"started {rec.id}" if now.started_at else f"queued {rec.id} (for a slot)"
    policy.extended(ctx, rec.id, rec.work_item, usd, turns, still)
    return Extended(
        session_id=rec.id,
        work_item=rec.work_item,
        extra_usd=done.spend.extra_usd,
        extra_turns=done.spend.extra_turns,
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
            if holds.gate(ctx, rec, None).kept is not None:
                return done
            sessions.wake(ctx, rec, stopped=True)
        done.append(rec.id)
    return done


def after_check(ctx: Ctx) -> None:
    """After every kind was checked: what waits for memory, then the queued spawns."""
    resume_waiting(ctx)
    sessions.start_queued(ctx)


KIND = policy.SpendKind(
    events="session", live=_live, fresh=_read, notice=_notice, after=after_check
)
"""What the spend policy knows of work-item sessions (registered by ``work_items.kind``)."""
