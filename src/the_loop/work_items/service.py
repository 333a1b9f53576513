"""The work-item session service: carries out the engine's decisions.

A policy on the agent-session layer (``the_loop.agent``): what to start, when, with which
prompt — spawn, deliver (respawning with resume when the agent is gone), close, pause/resume,
restart, and the FIFO queue behind ``routing.maxConcurrentSessions``; how an agent is started,
fed once, probed and stopped is the layer's. One work item is serialized by a lock per item;
one live session per item is guaranteed by a unique index.

Long because every verb of a work item (spawn, deliver, close, pause, restart, queue) runs under the
same per-item lock here; the cross-cutting parts move to the agent layer with issue 30's item 2.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from the_loop import agent as layer
from the_loop import engine
from the_loop import events as ev
from the_loop.agent import Agent, AgentKind, panes
from the_loop.agent.spend import admission, holds
from the_loop.cluster import placement
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict, LoopError, NotRunning, Refused, Unavailable
from the_loop.outbox import drain as outbox
from the_loop.outbox import github as writebacks
from the_loop.outbox import notices
from the_loop.outbox import slack as slack_out
from the_loop.prompts import event_context, fresh_note, render_event, render_spawn, spawn_context
from the_loop.refs import WorkItemRef, new_session_id
from the_loop.runner import Probe
from the_loop.store import attention as attention_store
from the_loop.store import github_state
from the_loop.store import prompts as queue
from the_loop.store import sessions as store
from the_loop.store import usage as usage_store
from the_loop.store.conn import Connection
from the_loop.store.events import NewEvent
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.work import WorkEvent
from the_loop.work_items import notice, workspace
from the_loop.work_items.records import get as _get
from the_loop.work_items.records import list_sessions as list_sessions
from the_loop.work_items.records import resolve as resolve

SOURCE = "sessions"


@dataclass
class Outcome:
    """What processing one work event did: the engine's reasons, one line per action, and the
    events of its decision-only actions (``records``), which the caller commits with the
    delivery's outcome in one transaction."""

    reasons: list[str] = field(default_factory=list)
    done: list[str] = field(default_factory=list)
    actions: tuple[engine.Action, ...] = ()
    records: list[NewEvent] = field(default_factory=list)

    @property
    def summary(self) -> str:
        return "; ".join(self.done) or "nothing"


# --- entry point for work events ------------------------------------------------------------


def handle_event(
    ctx: Ctx, event: WorkEvent, prior: engine.PriorDelivery = engine.PriorDelivery.NONE
) -> Outcome:
    """Decide and act on EVENT with its work items locked; then start queued sessions. The
    object EVENT authored is remembered as processed (with the prompt queued for it, if any).
    A decision-only action (ignore, duplicate, unauthorized, kept open) writes nothing: its
    event is in the outcome's ``records``, for the inbox to commit with the delivery's
    outcome."""
    keys = [item.slug for item in event.items] or ["no-item"]
    with layer.hold(ctx, keys):
        placement.settle(ctx, event.items)  # another node's session: handed over to it
        state = _route_state(ctx, event, prior)
        decision = engine.decide(event, state, ctx.config)
        outcome = Outcome(reasons=list(decision.reasons), actions=decision.actions)
        for action in decision.actions:
            outcome.done.append(_execute(ctx, event, action, outcome.records))
        if state.seen_by is None and event.replay_key and not decision.queues_prompt:
            with ctx.db.transaction() as tx:
                github_state.record(tx, event.replay_key, event.delivery_id, event.own)
    if any(isinstance(a, engine.Close) for a in decision.actions):
        start_queued(ctx)
    return outcome


def _route_state(ctx: Ctx, event: WorkEvent, prior: engine.PriorDelivery) -> engine.RouteState:
    conn = ctx.db.connect()
    live: dict[WorkItemRef, engine.LiveSession] = {}
    for item in event.items:
        rec = store.live_for(conn, str(item))
        if rec is not None:
            status = (
                engine.LiveStatus.PAUSED
                if rec.status is SessionStatus.paused
                else engine.LiveStatus.ACTIVE
            )
            row = attention_store.get(conn, rec.id)
            live[item] = engine.LiveSession(rec.id, status, row.requester if row else "")
    seen_by = github_state.seen_by(conn, event.replay_key, other_than=event.delivery_id)
    return engine.RouteState(live=live, prior=prior, seen_by=seen_by)


def _emit(ctx: Ctx, type_: str, event: WorkEvent | None = None, **kw: Any) -> None:
    ev.emit(
        ctx.db,
        type_,
        source=SOURCE,
        delivery_id=event.delivery_id if event is not None else None,
        **kw,
    )


def _decided(event: WorkEvent, type_: str, **kw: Any) -> NewEvent:
    """The event of a decision-only action on EVENT, built now and committed later."""
    return ev.build(type_, source=SOURCE, delivery_id=event.delivery_id, **kw)


def _execute(ctx: Ctx, event: WorkEvent, action: engine.Action, records: list[NewEvent]) -> str:
    """Carry out ACTION; a decision-only action's event goes to RECORDS instead."""
    own = str(event.own) if event.own else None
    if isinstance(action, engine.Ignore):
        reason = action.reason.value
        records.append(_decided(event, "route.ignored", work_item=own, reason=reason))
        return f"ignored ({reason})"
    if isinstance(action, engine.Duplicate):
        records.append(_decided(event, "webhook.duplicate"))
        return "duplicate"
    if isinstance(action, engine.Unauthorized):
        actor = action.actor
        records.append(_decided(event, "route.unauthorized", work_item=own, actor=actor))
        return f"unauthorized ({actor})"
    if isinstance(action, engine.Reply):
        _emit(ctx, "route.replied", event, work_item=str(action.item), text=action.text)
        notices.tell(ctx, event.source, action.item, action.to, action.text, event.delivery_id)
        return f"replied on {action.item}"
    if isinstance(action, engine.Spawn):
        rec = spawn(ctx, action.item, event, action.instruction)
        return f"{'queued' if rec.status is SessionStatus.queued else 'spawned'} {rec.id}"
    if isinstance(action, engine.Deliver):
        return deliver_event(ctx, action.session_id, event)
    if isinstance(action, engine.Close):
        close(ctx, action.session_id, reason=action.reason.value, auto=True, event=event)
        return f"closed {action.item} ({action.reason.value})"
    if isinstance(action, engine.KeepOpen):
        why = f"{action.closed_item} closed"
        kw = {"work_item": str(action.item), "session_id": action.session_id, "reason": why}
        records.append(_decided(event, "session.kept_open", **kw))
        return f"kept {action.item} open"
    if isinstance(action, engine.AnswerPermission):
        via = "slack" if event.source == "slack" else "github-comment"
        done, refused = notice.answer_from_comment(ctx, action, via)
        if refused is not None:  # told where the command was written
            notices.tell(ctx, event.source, action.item, action.actor, refused, event.delivery_id)
        return done
    if isinstance(action, engine.Pause):
        set_paused(ctx, action.session_id, True, event)
        return f"paused {action.item}"
    set_paused(ctx, action.session_id, False, event)
    return f"resumed {action.item}"


# --- spawn ----------------------------------------------------------------------------------


def spawn(
    ctx: Ctx, ref: WorkItemRef, event: WorkEvent, instruction: str, harness: str | None = None
) -> SessionRecord:
    """Register a new session for REF and start it, or queue it when every slot is taken.
    HARNESS overrides ``routing.defaultHarness``."""
    prompt = render_spawn(spawn_context(event, ref, instruction), ctx.config.routing.prompts.spawn)
    harness = harness or ctx.config.routing.default_harness
    runner = ctx.config.routing.runner
    layer.adapter_for(ctx, harness).check_runner(runner)
    now = time.time()
    memory = admission.blocked(ctx)
    over = holds.item_over_budget(ctx, str(ref))  # the item's budget follows it (0050)
    rec = SessionRecord(
        id=new_session_id(),
        work_item=str(ref),
        harness=harness,
        runner=runner,
        tmux_target=ref.tmux_target if runner == "tmux" else None,
        cwd="",
        status=SessionStatus.queued,
        title=event.title or "",
        url=event.item_url or "",
        created_at=now,
        last_event_at=now,
        node=placement.this_node(ctx),
    )
    with ctx.db.transaction() as tx:
        running = store.count_running(tx, placement.slot_node(ctx))
        ahead = ctx.config.admission.enabled and store.oldest_queued(tx) is not None
        full = running >= ctx.config.routing.max_concurrent_sessions
        placement.place_new(ctx, full)
        queued = full or memory is not None or ahead or over is not None
        rec.status = SessionStatus.queued if queued else SessionStatus.active
        store.insert(tx, rec)
        attention_store.register(
            tx,
            rec.id,
            work_item=rec.work_item,
            standing=None,
            harness=harness,
            requester=event.actor,
            now=now,
        )
        store.add_prompt(tx, rec.id, prompt, event.delivery_id)
        holds.carry_over(tx, rec, over)
        github_state.record(tx, event.replay_key, event.delivery_id, event.own)
        if queued:
            writebacks.queue_pickup(tx, ctx.config, ref, event)
    if queued:
        outbox.wake(ctx)
        _emit(
            ctx,
            "dispatch.queued",
            event,
            work_item=rec.work_item,
            session_id=rec.id,
            running=running,
            reason="over-budget" if over else "slots" if full else "memory",
            detail=over or memory,
        )
        return rec
    return _start(ctx, rec, event, fresh=True)


def why_queued(ctx: Ctx, rec: SessionRecord) -> str:
    """Why REC, a queued session, has not started, as of now, and what starts it: a person
    who started it by hand is told so, as is one who looks at it (``sessions show``)."""
    over = holds.item_over_budget(ctx, rec.work_item)
    if over is not None:
        extend = f"the-loop sessions extend {rec.work_item}"
        return f"its budget is reached ({over}); `{extend}` lets it start"
    memory = admission.blocked(ctx)
    if memory is not None:
        return f"{memory}; it starts when memory frees"
    limit = ctx.config.routing.max_concurrent_sessions
    if store.count_running(ctx.db.connect(), placement.slot_node(ctx)) >= limit:
        taken = "the one session slot is" if limit == 1 else f"all {limit} session slots are"
        return (
            f"{taken} taken (routing.maxConcurrentSessions); it starts when a session closes"
            " (`the-loop sessions list --status active`)"
        )
    return "it starts at the daemon's next look, after any session queued before it"


def _start(
    ctx: Ctx, rec: SessionRecord, event: WorkEvent | None, fresh: bool = False
) -> SessionRecord:
    """Start REC's agent, then deliver its pending prompts in order (a headless start takes
    the first one itself).

    A live target whose recorded owner is REC was started by an earlier attempt that crashed
    before recording it: it is adopted, never spawned over and never started twice. FRESH
    means REC was registered just now by ``spawn`` (nothing can carry its new id yet, so there
    is nothing to adopt) and its 👀 write-back is still due: it is posted after the harness
    started, so GitHub is never waited for before the agent runs.
    """
    ref = WorkItemRef.parse(rec.work_item)
    pending = queue.pending(ctx.db.connect(), rec.id)
    first = pending[0] if pending else None
    took_first = False
    try:
        if fresh or not _adopt(ctx, rec):
            rec.cwd = str(_workspace(ctx, rec, ref, event))
            started = layer.start(ctx, agent_of(rec), first.text if first else None, rec.id)
            rec.harness_session_id = started.conversation_id
            took_first = started.took_prompt
    except (LoopError, OSError) as exc:
        _abandon(ctx, rec, exc, event, pickup_due=fresh)
        raise
    announcement = writebacks.announcement(ctx, ref, rec.id)
    with ctx.db.transaction() as tx:
        store.update(
            tx,
            rec.id,
            status=SessionStatus.active,
            cwd=rec.cwd,
            harness_session_id=rec.harness_session_id,
            started_at=time.time(),
        )
        if first and took_first:
            queue.mark(tx, first.seq, queue.PromptStatus.delivered)
        if fresh:
            writebacks.queue_pickup(tx, ctx.config, ref, event)
        writebacks.queue_spawned(tx, ctx.config, ref, event, True, announcement)
        slack_announced = slack_out.queue_work_item(tx, ctx, ref, rec.id)
    outbox.wake(ctx)
    if slack_announced:
        slack_out.wake(ctx)
    rec.status, rec.started_at = SessionStatus.active, time.time()
    _emit(
        ctx,
        "session.spawned",
        event,
        work_item=rec.work_item,
        session_id=rec.id,
        harness=rec.harness,
        runner=rec.runner,
        target=rec.tmux_target,
        cwd=rec.cwd,
    )
    _flush_pending(ctx, rec, event)
    return rec


def _adopt(ctx: Ctx, rec: SessionRecord) -> bool:
    """True when REC's live target carries REC as its owner (a spawn that a crash hid)."""
    if rec.runner != "tmux" or rec.tmux_target is None:
        return False
    target = rec.tmux_target
    if panes.probe(ctx, target) is not Probe.LIVE or panes.owner_of(ctx, target) != rec.id:
        return False
    rec.harness_session_id = rec.harness_session_id or rec.id
    rec.cwd = rec.cwd or str(workspace.prepare(ctx.config, WorkItemRef.parse(rec.work_item)).path)
    return True


def _workspace(ctx: Ctx, rec: SessionRecord, ref: WorkItemRef, event: WorkEvent | None) -> Path:
    ws = workspace.prepare(ctx.config, ref)
    if ws.created:
        _emit(
            ctx,
            "workspace.prepared",
            event,
            work_item=rec.work_item,
            path=str(ws.path),
            branch=ws.branch,
            setupRan=ws.setup_ran,
        )
    return ws.path


def agent_of(rec: SessionRecord) -> Agent:
    """The agent session of work-item session REC, as the agent-session layer sees it."""
    return Agent(
        key=rec.id,
        kind=AgentKind.WORK_ITEM,
        harness=rec.harness,
        runner=rec.runner,
        cwd=Path(rec.cwd),
        target=rec.tmux_target,
        conversation_id=rec.harness_session_id,
        label=rec.work_item,
    )


def transcript_path(ctx: Ctx, rec: SessionRecord) -> Path:
    return layer.transcript_path(ctx, agent_of(rec))


def _abandon(
    ctx: Ctx,
    rec: SessionRecord,
    exc: BaseException,
    event: WorkEvent | None,
    *,
    pickup_due: bool = False,
) -> None:
    """Record that REC's start failed, with its 😕 (and the 👀 still due) in the same commit."""
    ref = WorkItemRef.parse(rec.work_item)
    with ctx.db.transaction() as tx:
        store.update(
            tx,
            rec.id,
            status=SessionStatus.closed,
            closed_at=time.time(),
            close_reason="spawn-failed",
        )
        if pickup_due:
            writebacks.queue_pickup(tx, ctx.config, ref, event)
        writebacks.queue_spawned(tx, ctx.config, ref, event, False, "")
    outbox.wake(ctx)
    _emit(
        ctx,
        "session.spawn_failed",
        event,
        work_item=rec.work_item,
        session_id=rec.id,
        error=str(exc),
    )


def start_queued(ctx: Ctx) -> list[SessionRecord]:
    """Start queued sessions, oldest first, while slots are free."""
    started: list[SessionRecord] = []
    while True:
        if store.oldest_queued(ctx.db.connect()) is None or admission.blocked(ctx):
            return started  # memory is short: the daemon tries again (FIFO kept)
        with ctx.db.transaction() as tx:
            if store.count_running(tx, placement.slot_node(ctx)) >= (
                ctx.config.routing.max_concurrent_sessions
            ):
                return started
            rec = store.oldest_queued(tx)
            if rec is None:
                return started
            rec.node = placement.this_node(ctx)
            store.update(tx, rec.id, status=SessionStatus.active, node=rec.node)
        with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
            try:
                started.append(_start(ctx, rec, None))
            except (LoopError, OSError):  # recorded by _abandon; the next queued one may start
                continue


# --- deliver --------------------------------------------------------------------------------


def waiting(conn: Connection, session_id: str, delivery_id: str) -> bool:
    """Whether the prompt of DELIVERY_ID still waits in session SESSION_ID's queue."""
    return any(p.delivery_id == delivery_id for p in queue.pending(conn, session_id))


def deliver_event(ctx: Ctx, session_id: str, event: WorkEvent) -> str:
    """Render EVENT's prompt and deliver it into session SESSION_ID."""
    rec = _get(ctx, session_id)
    if event.source == "github":
        prompt = render_event(event_context(event, rec.work_item), ctx.config.routing.prompts.event)
    else:  # a reply in the item's bound Slack thread reads as an operator's message
        prompt = _message(event.actor, rec.work_item, event.body or "")
    return deliver(ctx, rec, prompt, event.delivery_id, event)


def deliver(
    ctx: Ctx,
    rec: SessionRecord,
    prompt: str,
    delivery_id: str | None,
    event: WorkEvent | None = None,
) -> str:
    """Queue PROMPT for REC (once per delivery id) and deliver everything pending, in order.

    A delivery id already queued for REC is not queued twice; whatever is still pending (a
    crash interrupted it) is delivered now.
    """
    with ctx.db.transaction() as tx:
        seq = queue.add(tx, rec.id, prompt, delivery_id)
        if event is not None:  # its comment or review is processed with its prompt queued
            github_state.record(tx, event.replay_key, event.delivery_id, event.own)
    if seq is None:
        _emit(ctx, "webhook.duplicate", event, work_item=rec.work_item, session_id=rec.id)
    if rec.status is SessionStatus.queued:
        return f"queued for {rec.id}"
    if rec.status is SessionStatus.closed:
        raise NotRunning(f"session {rec.id} of {rec.work_item} is closed")
    if rec.started_at is None:
        return f"started {_start(ctx, rec, event).id}"
    gate = holds.gate(ctx, rec, delivery_id)
    if gate.kept is not None:
        return gate.kept
    before = queue.delivered_count(ctx.db.connect(), rec.id)
    result = _flush_pending(ctx, rec, event, stopped=gate.woke)
    if seq is None and queue.delivered_count(ctx.db.connect(), rec.id) == before:
        return "already delivered"
    return result


def wake(ctx: Ctx, rec: SessionRecord, *, stopped: bool = False) -> str:
    """Bring back REC's agent (its conversation resumed) and deliver what is pending. STOPPED:
    its harness was stopped on purpose (suspended); otherwise an agent found gone is told as
    gone (``report_gone``) before it is started again."""
    agent = agent_of(rec)
    pane = layer.probe(ctx, agent)
    if pane in ("dead", "absent"):
        _revive(ctx, rec, agent, None, stopped, pane)
    return _flush_pending(ctx, rec, None, stopped=stopped)


def report_gone(ctx: Ctx, rec: SessionRecord, pane: str) -> bool:
    """Tell once that REC's agent is gone (PANE ``dead``: the harness exited; ``absent``: its
    tmux session vanished): its attention ``blocked``, which the next message lifts by starting
    it again, and ``session.vanished``. Whoever finds it first tells it (the reconciler, or a
    delivery that starts it again), under the item's processing lock; an agent whose spend
    policy holds it was stopped on purpose and is not told. True when told now."""
    conn = ctx.db.connect()
    if usage_store.holds_of(conn, [rec.id]):
        return False
    why = "the harness exited" if pane == "dead" else "its tmux session vanished"
    with ctx.db.transaction() as tx:
        told = attention_store.set_gone(
            tx, rec.id, why, now=time.time(), work_item=rec.work_item, source=SOURCE
        )
    if told is None:
        return False  # told already; starting it again lifts it
    _emit(ctx, "session.vanished", work_item=rec.work_item, session_id=rec.id, pane=pane)
    return True


def _flush_pending(
    ctx: Ctx, rec: SessionRecord, event: WorkEvent | None, *, stopped: bool = False
) -> str:
    """Deliver REC's pending prompts in order; each exactly once, even across a crash. STOPPED:
    its harness was stopped on purpose (a wake from suspension), so an agent found gone is
    started again without being told as gone."""
    agent = agent_of(rec)

    def delivered(chars: int) -> None:
        _emit(
            ctx,
            "session.delivered",
            event,
            work_item=rec.work_item,
            session_id=rec.id,
            chars=chars,
        )

    done = layer.flush(
        ctx,
        agent,
        revive=lambda: _revive(ctx, rec, agent, event, stopped),
        record=lambda tx: store.update(tx, rec.id),
        on_delivered=delivered,
    )
    if agent.conversation_id != rec.harness_session_id:
        rec.harness_session_id = agent.conversation_id
        with ctx.db.transaction() as tx:
            store.update(tx, rec.id, harness_session_id=rec.harness_session_id)
    if done.held is not None:
        return f"{layer.held_detail(done.held, rec.id)} ({done.count} delivered)"
    return f"delivered {done.count} to {rec.id}"


def _revive(
    ctx: Ctx,
    rec: SessionRecord,
    agent: Agent,
    event: WorkEvent | None,
    stopped: bool,
    pane: str | None = None,
) -> None:
    """REC's agent was found gone (its PANE, when already probed): tell it (unless it was
    STOPPED on purpose), then start it again."""
    pane = layer.probe(ctx, agent) if pane is None else pane
    if pane in ("dead", "absent") and not stopped:
        report_gone(ctx, rec, pane)
    _respawn(ctx, rec, agent, event)


def _respawn(ctx: Ctx, rec: SessionRecord, agent: Agent, event: WorkEvent | None) -> None:
    """Start REC's agent again, resuming its conversation when possible, else fresh with a
    note; the prompt itself is pasted afterwards. A target found running (ours) is delivered
    into."""
    try:
        outcome = layer.resume(ctx, agent, fallback=fresh_note(rec.work_item, rec.title, rec.url))
    except layer.AlreadyRunning:
        _emit(ctx, "session.respawn_averted", event, work_item=rec.work_item, session_id=rec.id)
        return
    if outcome.attempted and not outcome.resumed:
        _emit(
            ctx,
            "session.resume_failed",
            event,
            work_item=rec.work_item,
            session_id=rec.id,
            harnessSessionId=outcome.previous,
            reason=outcome.detail,
        )
    rec.harness_session_id = agent.conversation_id
    placement.report_move(ctx, rec, outcome.resumed, outcome.detail)
    _respawned(ctx, rec, event, resumed=outcome.resumed)


def _respawned(ctx: Ctx, rec: SessionRecord, event: WorkEvent | None, resumed: bool) -> None:
    """Record REC's agent started again: its conversation, and when its program started (what
    tells this program from the one before, whose end was watched: decision 0099)."""
    rec.started_at = time.time()
    with ctx.db.transaction() as tx:
        store.update(
            tx, rec.id, harness_session_id=rec.harness_session_id, started_at=rec.started_at
        )
    _emit(
        ctx,
        "session.respawned",
        event,
        work_item=rec.work_item,
        session_id=rec.id,
        resumed=resumed,
        harnessSessionId=rec.harness_session_id,
    )


# --- close, pause ---------------------------------------------------------------------------


def close(
    ctx: Ctx,
    session_id: str,
    reason: str,
    *,
    auto: bool = False,
    kill_tmux: bool | None = None,
    event: WorkEvent | None = None,
) -> SessionRecord:
    """Close a session: terminate the harness, keep or kill tmux, apply the workspace policy."""
    rec = _get(ctx, session_id)
    if not rec.live:
        raise Conflict(f"session {rec.id} of {rec.work_item} is already closed")
    cfg = ctx.config.tmux
    if rec.tmux_target and rec.status is not SessionStatus.queued:
        _stop_tmux(
            ctx, rec, event, kill=not cfg.keep_session_on_close if kill_tmux is None else kill_tmux
        )
    with ctx.db.transaction() as tx:
        store.update(
            tx, rec.id, status=SessionStatus.closed, closed_at=time.time(), close_reason=reason
        )
    if ctx.config.workspaces.remove_on_close and workspace.remove(
        ctx.config, WorkItemRef.parse(rec.work_item)
    ):
        _emit(ctx, "workspace.removed", event, work_item=rec.work_item, session_id=rec.id)
    kind = "session.autoclosed" if auto else "session.closed"
    _emit(ctx, kind, event, work_item=rec.work_item, session_id=rec.id, reason=reason)
    return _get(ctx, session_id)


def _stop_tmux(ctx: Ctx, rec: SessionRecord, event: WorkEvent | None, kill: bool) -> None:
    agent = agent_of(rec)
    if ctx.config.tmux.kill_harness_on_close:
        report = layer.terminate(ctx, agent)
        _emit(
            ctx,
            "session.harness_terminated",
            event,
            work_item=rec.work_item,
            session_id=rec.id,
            signalled=list(report.signalled),
            killed=list(report.killed),
            probe=report.probe.value,
            error=report.error or report.refused,
        )
    if kill:
        layer.kill(ctx, agent, timeout=0)
    layer.forget_ready(ctx, agent)


def set_paused(ctx: Ctx, session_id: str, paused: bool, event: WorkEvent | None = None) -> None:
    rec = _get(ctx, session_id)
    if not rec.live or rec.status is SessionStatus.queued:
        raise Conflict(f"session {rec.id} of {rec.work_item} is {rec.status.value}")
    status = SessionStatus.paused if paused else SessionStatus.active
    with ctx.db.transaction() as tx:
        store.update(tx, rec.id, status=status)
    _emit(
        ctx,
        "session.paused" if paused else "session.resumed",
        event,
        work_item=rec.work_item,
        session_id=rec.id,
    )


# --- operator verbs (CLI, API) --------------------------------------------------------------


def say(ctx: Ctx, ref_or_id: str, text: str, actor: str | None = None) -> str:
    """Deliver an operator's TEXT into a live session."""
    if not text.strip():
        raise BadInput("refusing to send an empty message")
    rec = resolve(ctx, ref_or_id)
    if not rec.live:
        raise NotRunning(f"session {rec.id} of {rec.work_item} is closed")
    prompt = _message(actor or getpass.getuser(), rec.work_item, text)
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        placement.operate_here(ctx, rec, placement.command("say", rec.work_item, "--text", text))
        return deliver(ctx, _get(ctx, rec.id), prompt, None)


def _message(who: str, work_item: str, text: str) -> str:
    return f"Message from {who} (operator) about {work_item}:\n\n{text}"


def close_by_operator(ctx: Ctx, ref_or_id: str, kill_tmux: bool | None = None) -> SessionRecord:
    rec = resolve(ctx, ref_or_id)
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        placement.operate_here(ctx, rec, placement.command("close", rec.work_item))
        closed = close(ctx, rec.id, "operator", kill_tmux=kill_tmux)
    start_queued(ctx)
    return closed


def restart_by_operator(ctx: Ctx, ref_or_id: str) -> str:
    """Stop the live session's agent and start it again, resuming its conversation, with the
    environment of the process that restarts it as it is now (a key exported since: decision
    0081), then deliver what waits for it (decision 0082: a turn that failed for want of a key
    sent its messages again). What happened, as ``say`` tells it. A suspended session is woken;
    one stopped over budget is refused (``sessions extend`` raises its budget and resumes it),
    as is a closed, queued or headless one, and a pane the-loop did not start."""
    rec = resolve(ctx, ref_or_id)
    if not rec.live or rec.status is SessionStatus.queued:
        raise Conflict(f"session {rec.id} of {rec.work_item} is {rec.status.value}: not running")
    if rec.runner != "tmux":
        raise Conflict(
            f"session {rec.id} of {rec.work_item} is headless: no agent runs between deliveries"
        )
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        placement.operate_here(ctx, rec, placement.command("restart", rec.work_item))
        rec = _get(ctx, rec.id)
        hold = usage_store.holds_of(ctx.db.connect(), [rec.id]).get(rec.id)
        if hold == usage_store.OVER_BUDGET:
            raise Conflict(
                f"session {rec.id} of {rec.work_item} is over budget: `the-loop sessions extend "
                f"{rec.work_item}` raises its budget and resumes it"
            )
        agent = agent_of(rec)
        stopped = layer.terminate(ctx, agent)  # a dead or gone pane: nothing to signal
        if stopped.refused:
            raise Refused(stopped.refused)  # not ours: untouched
        if not stopped.ok:
            raise Unavailable(
                f"could not stop the agent of {rec.work_item}: "
                f"{stopped.error or f'still running: {stopped.survivors}'}"
            )
        if hold is not None:
            holds.lift(ctx, rec, "restarted by the operator")
        _emit(ctx, "session.restarted", work_item=rec.work_item, session_id=rec.id)
        _respawn(ctx, rec, agent, None)  # what held the old process (no login, a dialog) is gone
        return _flush_pending(ctx, rec, None, stopped=True)


def pause_by_operator(ctx: Ctx, ref_or_id: str, paused: bool) -> SessionRecord:
    rec = resolve(ctx, ref_or_id)
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        set_paused(ctx, rec.id, paused)
    return _get(ctx, rec.id)


def screen(ctx: Ctx, ref_or_id: str, lines: int = 200) -> str:
    """The last LINES of the session's screen (tmux) or transcript (process runner)."""
    return layer.screen(ctx, agent_of(resolve(ctx, ref_or_id)), lines)


def probe(ctx: Ctx, rec: SessionRecord) -> str:
    """The tmux state of REC's target (live, dead, absent, unknown), or ``headless``."""
    return layer.probe(ctx, agent_of(rec))
