"""The standing session service: named agents that belong to no work item.

A policy on top of the agent-session layer (``the_loop.agent``): definitions are resolved by
``the_loop.standing.defs`` (declared first, else created), and the verbs decide what to start,
stop or say; how is the layer's. Standing sessions always run under the tmux runner, in
``loop-standing-NAME``, marked as the-loop's with the key ``standing:NAME``. Verbs on one name
are serialized across processes (a lock per name). The record says what the-loop last did:
``running`` is written just before a spawn and ``stopped`` only once the tmux session is gone or
a spawn failed, so a live pane whose record is missing or ``stopped`` was not started by
the-loop and is never adopted, signalled or killed. A ``say`` is queued in the database and
delivered exactly once, even across a crash (the next ``say`` delivers what a crash left).
Budgets and idle suspend (``over-budget`` refuses ``say``/``start``, ``suspended`` is resumed by
them) are ``the_loop.standing.spend``'s.

Long because every verb of a standing session runs under the same per-name lock here; the
cross-cutting parts move to the agent layer with issue 30's item 2.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import Agent, Flushed, panes
from the_loop.agent.spend import policy as spend_policy
from the_loop.agent.spend import usage
from the_loop.context import Ctx
from the_loop.errors import (
    BadInput,
    Conflict,
    LoopError,
    NotFound,
    NotRunning,
    Refused,
    Unavailable,
    ValidationFailed,
    message_of,
)
from the_loop.faults import crash_point
from the_loop.outbox.slack import announce_standing
from the_loop.prompts import render_standing
from the_loop.refs import new_session_id, standing_key, standing_target, validate_standing_name
from the_loop.runner import Probe
from the_loop.standing import node as pinning
from the_loop.standing import spend as standing_spend
from the_loop.standing.defs import (
    CreateResult,
    Definition,
    DeleteResult,
    SayResult,
    StandingExtended,
    StandingView,
    StartKind,
    StartOutcome,
    StopKind,
    StopOutcome,
    ViewStatus,
    declared_entry,
    declared_record,
    default_cwd,
    definition,
    from_record,
    new_record,
    not_running,
    resumable,
    snapshot,
    speaker,
    terminate_problem,
)
from the_loop.standing.spend import agent_of
from the_loop.standing.views import auto_start_names, health_problems, list_standing
from the_loop.store import attention as attention_store
from the_loop.store import standing as store
from the_loop.store import usage as usage_store
from the_loop.store.standing import StandingRecord, StandingSource, StandingStatus

__all__ = [
    "CreateResult",
    "Definition",
    "DeleteResult",
    "SayResult",
    "StandingExtended",
    "StandingView",
    "StartKind",
    "StartOutcome",
    "StopKind",
    "StopOutcome",
    "ViewStatus",
    "agent_of",
    "autostart",
    "create",
    "default_cwd",
    "definition",
    "delete",
    "extend",
    "health_problems",
    "list_standing",
    "restart",
    "say",
    "start",
    "stop",
    "stop_all",
]

SOURCE = "standing"


# --- create / delete ------------------------------------------------------------------------


def create(
    ctx: Ctx,
    name: str,
    *,
    harness: str | None = None,
    args: list[str] | None = None,
    cwd: Path | None = None,
    prompt: str | None = None,
    prompt_file: Path | None = None,
    description: str = "",
    auto_start: bool = True,
    start_now: bool = True,
) -> CreateResult:
    """Store a created definition and start it (unless not START_NOW).

    Refused: an invalid name (``BadInput``), a declared name or an existing record
    (``Conflict``), an unusable definition (``ValidationFailed``). When the start fails, the
    stored record is removed again (``standing.create_failed``) and the error is raised.
    ``prompt_file`` and a relative ``cwd`` are read relative to the caller's directory; the
    brief is stored as text. ``None`` harness, args or cwd inherit at every start.
    """
    validate_standing_name(name)
    _refuse_declared(ctx, name, "create")
    with _locked(ctx, name):
        existing = store.get(ctx.db.connect(), name)
        if existing is not None:
            raise Conflict(
                f"standing session {name} already exists ({existing.source} record); "
                f"delete it first with `the-loop standing delete {name}`"
            )
        rec = new_record(name, harness, args, cwd, prompt, prompt_file, description, auto_start)
        defn = from_record(ctx, rec)
        if defn.problems:  # nothing stored: not `require_valid`, whose advice is to stop it
            raise ValidationFailed(f"cannot create standing session {name}", defn.problems)
        with ctx.db.transaction() as tx:
            store.insert(tx, rec)
        _emit(ctx, "standing.created", name, harness=defn.harness, cwd=str(defn.cwd))
        if not start_now:
            return CreateResult(definition=defn)
        held = standing_spend.held_start(ctx, defn)  # over budget across a delete (0050)
        return CreateResult(definition=defn, start=held or _start_created(ctx, defn))


def _start_created(ctx: Ctx, defn: Definition) -> StartOutcome:
    try:
        return _start_locked(ctx, defn)
    except Exception as exc:
        with ctx.db.transaction() as tx:
            store.delete(tx, defn.name)
        _emit(ctx, "standing.create_failed", defn.name, error=message_of(exc))
        raise


def _refuse_declared(ctx: Ctx, name: str, verb: str) -> None:
    found = declared_entry(ctx, name)
    if found is None:
        return
    key = f"standing.sessions[{found[0]}]"
    if verb == "create":
        raise Conflict(
            f"standing session {name} is declared in the config ({key}); "
            "a created session cannot take a declared name"
        )
    raise Conflict(
        f"standing session {name} is declared in the config ({key}): remove it there to delete "
        f"it, or stop it with `the-loop standing stop {name}`"
    )


def delete(ctx: Ctx, name: str) -> DeleteResult:
    """Stop, then remove a created standing session (or a record left by a declaration that
    was removed from the config). Refused for a declared name (``Conflict`` naming the config
    key and ``stop``); ``NotFound`` for an unknown name. A failed stop removes nothing."""
    validate_standing_name(name)
    _refuse_declared(ctx, name, "delete")
    with _locked(ctx, name):
        if store.get(ctx.db.connect(), name) is None:
            raise NotFound(f"no standing session {name}")
        pinning.require_here(ctx, name, pinning.command("delete", name))
        stopped = _stop_locked(ctx, name)
        with ctx.db.transaction() as tx:
            store.delete(tx, name)
        standing_spend.forget(ctx, name)
    _emit(ctx, "standing.deleted", name)
    return DeleteResult(name=name, stop=stopped)


# --- start ----------------------------------------------------------------------------------


def start(ctx: Ctx, name: str | None = None) -> list[StartOutcome]:
    """Start NAME, or every declared and every created one (no NAME).

    With a NAME every refusal is raised: ``BadInput``/``ValidationFailed``, ``NotFound``,
    ``Refused`` (a live tmux session the-loop did not start), ``Unavailable`` (tmux not
    answering: nothing spawned), ``SpawnFailed``. Without one (this node's and unpinned ones on
    a shared database), each failure becomes an outcome ``failed`` carrying the message.
    """
    if name is not None:
        with _locked(ctx, name):
            defn = definition(ctx, name).require_valid()
            pinning.require_here(ctx, name, pinning.command("start", name), take_over=True)
            return [_start_locked(ctx, defn)]
    names = [each for each in _all_names(ctx) if pinning.startable_here(ctx, each)]
    return [_start_captured(ctx, each) for each in names]


def _start_captured(ctx: Ctx, name: str) -> StartOutcome:
    try:
        return start(ctx, name)[0]
    except LoopError as exc:
        return StartOutcome(
            name=name, outcome=StartKind.failed, target=standing_target(name), error=exc.message
        )


def _all_names(ctx: Ctx) -> list[str]:
    declared = [entry.name for entry in ctx.config.standing.sessions]
    created = [
        rec.name
        for rec in store.list_records(ctx.db.connect())
        if rec.source is StandingSource.created and rec.name not in declared
    ]
    return [*declared, *created]


def _start_locked(ctx: Ctx, defn: Definition) -> StartOutcome:
    """Start DEFN with its lock held: already running, resumed, or started fresh. Refused
    while over budget; a suspended one is lifted and resumed."""
    standing_spend.refuse_over_budget(ctx, defn.name)
    standing_spend.lift_suspended(ctx, defn.name, "started")
    rec = store.get(ctx.db.connect(), defn.name)
    probe = panes.probe(ctx, defn.target)
    if probe is Probe.UNKNOWN:
        error = Unavailable(f"tmux did not answer about {defn.target}; nothing spawned")
        _emit(ctx, "standing.spawn_failed", defn.name, error=error.message)
        raise error
    if probe is Probe.LIVE:
        if rec is None or rec.status is StandingStatus.stopped:
            raise _foreign(ctx, defn.target)
        return StartOutcome(
            name=defn.name,
            outcome=StartKind.already_running,
            target=defn.target,
            conversation_id=rec.conversation_id,
        )
    conversation = resumable(rec)
    if conversation is not None:
        resumed = _try_resume(ctx, defn, conversation)
        if resumed is not None:
            return resumed
    return _start_fresh(ctx, defn, rec.conversation_id if rec else None)


def _foreign(ctx: Ctx, target: str) -> Refused:
    inspect = panes.inspect_command(ctx, target)
    return Refused(
        f"a live tmux session {target} exists that the-loop did not start (no running record); "
        f"it will not adopt, signal or kill it. Look at it with `{inspect}`"
    )


def _try_resume(ctx: Ctx, defn: Definition, conversation: str) -> StartOutcome | None:
    """Resume CONVERSATION, probed alive; None (after ``standing.resume_failed``) when it died."""
    _mark_running(ctx, defn, conversation)
    detail = "the resumed agent exited"
    agent = agent_of(defn, conversation)
    try:
        _spawn(ctx, defn, agent, None, resume=True)
    except (Refused, Unavailable) as exc:
        _spawn_failed(ctx, defn, exc, conversation)
        raise
    except LoopError as exc:
        detail = exc.message
    else:
        seconds = ctx.config.tmux.resume_probe_seconds
        if layer.runner_for(agent).stays_alive(ctx, agent, seconds):
            _started(ctx, defn.name, conversation)
            _emit(ctx, "standing.resumed", defn.name, session_id=conversation)
            return StartOutcome(
                name=defn.name,
                outcome=StartKind.resumed,
                target=defn.target,
                conversation_id=conversation,
            )
    _emit(ctx, "standing.resume_failed", defn.name, session_id=conversation, error=detail)
    return None


def _start_fresh(ctx: Ctx, defn: Definition, previous: str | None) -> StartOutcome:
    """A new conversation whose first prompt is the boot directive followed by the brief.

    The directive is queued and delivered once the agent takes input (never through argv);
    messages a crash left queued for the previous conversation are dropped first, so nothing
    precedes the directive. When the agent does not take it, it stays queued for the next
    ``say``."""
    minted = new_session_id()
    _mark_running(ctx, defn, minted)
    agent = agent_of(defn, minted)
    try:
        layer.drop_pending(ctx, agent)
        conversation = _spawn(ctx, defn, agent, None, resume=False)
    except (LoopError, OSError) as exc:
        _spawn_failed(ctx, defn, exc, previous)
        raise
    _started(ctx, defn.name, conversation)
    with ctx.db.transaction() as tx:
        layer.enqueue(tx, agent, render_standing(defn.name, defn.brief), None)
    try:
        layer.flush(ctx, agent, revive=None)
    except (NotRunning, Unavailable) as exc:
        _emit(
            ctx,
            "standing.spawn_failed",
            defn.name,
            error=f"boot directive not yet delivered: {exc.message}",
        )
    _emit(
        ctx,
        "standing.started",
        defn.name,
        session_id=conversation,
        harness=defn.harness,
        target=defn.target,
        cwd=str(defn.cwd),
    )
    return StartOutcome(
        name=defn.name,
        outcome=StartKind.started,
        target=defn.target,
        conversation_id=conversation,
    )


def _spawn(
    ctx: Ctx, defn: Definition, agent: Agent, prompt: str | None, *, resume: bool
) -> str | None:
    """Spawn DEFN's agent (fresh with PROMPT, or resuming); the conversation id it runs."""
    if defn.default_cwd:
        defn.cwd.mkdir(parents=True, exist_ok=True, mode=0o700)
    runner = layer.runner_for(agent)
    return runner.launch(ctx, agent, prompt, agent.conversation_id, resume=resume)


def _mark_running(ctx: Ctx, defn: Definition, conversation: str) -> None:
    """Record that a spawn of CONVERSATION is about to happen (before it happens), and the
    agent's harness for its attention (a work item's is recorded with its session)."""
    with ctx.db.transaction() as tx:
        attention_store.register(
            tx, standing_key(defn.name), work_item=None, standing=defn.name,
            harness=defn.harness, requester="", now=time.time(),
        )  # fmt: skip
        rec = store.get(tx, defn.name)
        if rec is None:
            store.insert(tx, declared_record(defn, conversation, pinning.pin(ctx)))
            return
        fields = snapshot(defn) if rec.source is StandingSource.declared else {}
        fields["node"] = pinning.pin(ctx)
        store.update(
            tx, defn.name, status=StandingStatus.running, conversation_id=conversation, **fields
        )


def _started(ctx: Ctx, name: str, conversation: str | None) -> None:
    with ctx.db.transaction() as tx:
        store.update(tx, name, conversation_id=conversation, started_at=time.time())
    announce_standing(ctx, name)  # the first start only: a restart keeps the thread


def _spawn_failed(ctx: Ctx, defn: Definition, exc: BaseException, previous: str | None) -> None:
    """Put the record back to ``stopped`` with PREVIOUS conversation and report. When tmux did
    not answer, whether the spawn happened is unknown: the record stays ``running`` so that
    ``stop`` can still clean up."""
    if not isinstance(exc, Unavailable):
        with ctx.db.transaction() as tx:
            store.update(tx, defn.name, status=StandingStatus.stopped, conversation_id=previous)
    _emit(ctx, "standing.spawn_failed", defn.name, error=message_of(exc))


# --- stop / restart / extend / say -----------------------------------------------------------


def stop(ctx: Ctx, name: str | None = None) -> list[StopOutcome]:
    """Stop NAME, or every recorded one (no NAME): terminate the harness, then kill its tmux
    session; the record keeps its conversation id with status ``stopped``.

    Works from the records, so it works while a declaration is unusable. With a NAME: a
    declared name never started is ``already-stopped``; ``NotFound`` for an unknown name,
    ``Refused`` for a live pane the-loop did not start, ``Unavailable`` when stopping failed
    (``standing.stop_failed``). Without one (this node's on a shared database), failures
    become outcomes ``failed``.
    """
    if name is not None:
        validate_standing_name(name)
        with _locked(ctx, name):
            pinning.require_here(ctx, name, pinning.command("stop", name))
            return [_stop_locked(ctx, name)]
    records = store.list_records(ctx.db.connect())
    mine = [rec.name for rec in records if pinning.elsewhere(ctx, rec.name, rec) is None]
    return [_stop_captured(ctx, each) for each in mine]


def _stop_captured(ctx: Ctx, name: str) -> StopOutcome:
    try:
        return stop(ctx, name)[0]
    except LoopError as exc:
        return StopOutcome(
            name=name, outcome=StopKind.failed, target=standing_target(name), error=exc.message
        )


def _stop_locked(ctx: Ctx, name: str) -> StopOutcome:
    target = standing_target(name)
    rec = store.get(ctx.db.connect(), name)
    if rec is None and declared_entry(ctx, name) is None:
        raise NotFound(f"no standing session {name}")
    if rec is None or rec.status is StandingStatus.stopped:
        if panes.probe(ctx, target) is Probe.LIVE:
            raise _foreign(ctx, target)
        return StopOutcome(name=name, outcome=StopKind.already_stopped, target=target)
    return _terminate(ctx, rec, target)


def _terminate(ctx: Ctx, rec: StandingRecord, target: str) -> StopOutcome:
    agent = standing_spend.record_agent(rec)
    layer.refuse_foreign(ctx, agent)
    report = layer.terminate(ctx, agent)
    problem = terminate_problem(report)
    if problem is None:
        after = layer.kill(ctx, agent).probe
        if after is not Probe.ABSENT:
            problem = f"the tmux session {target} is still there after kill-session ({after})"
    if problem is not None:
        _emit(ctx, "standing.stop_failed", rec.name, session_id=rec.conversation_id, error=problem)
        raise Unavailable(f"could not stop standing session {rec.name}: {problem}")
    with ctx.db.transaction() as tx:
        store.update(tx, rec.name, status=StandingStatus.stopped)
    standing_spend.after_stop(ctx, rec.name)
    _emit(
        ctx,
        "standing.stopped",
        rec.name,
        session_id=rec.conversation_id,
        signalled=list(report.signalled),
        killed=list(report.killed),
    )
    kind = StopKind.already_stopped if report.probe is Probe.ABSENT else StopKind.stopped
    return StopOutcome(
        name=rec.name,
        outcome=kind,
        target=target,
        signalled=list(report.signalled),
        killed=list(report.killed),
    )


def restart(ctx: Ctx, name: str) -> StartOutcome:
    """Stop NAME, then start it again (resuming its conversation). Refused, before anything is
    stopped, when the definition is unusable."""
    with _locked(ctx, name):
        defn = definition(ctx, name).require_valid()
        pinning.require_here(ctx, name, pinning.command("restart", name), take_over=True)
        standing_spend.refuse_over_budget(ctx, name)
        _stop_locked(ctx, name)
        return _start_locked(ctx, defn)


def extend(ctx: Ctx, name: str, usd: float = 0.0, turns: int = 0) -> StandingExtended:
    """Raise NAME's allowance by USD dollars and TURNS turns; when that lifts it over its
    budgets and it was running, resume its conversation (``standing extend``)."""
    with _locked(ctx, name):
        defn = definition(ctx, name)
        again = pinning.command("extend", name, "--usd", f"{usd:g}", "--turns", str(turns))
        pinning.require_here(ctx, name, again)
        rec = store.get(ctx.db.connect(), name)
        key = standing_spend.key_of(name)
        done = spend_policy.grant(ctx, key, None, usd, turns)
        spend_policy.extended(ctx, key, None, usd, turns, done.still)
        started = None
        if done.lifted and rec is not None and rec.status is StandingStatus.running:
            started = _start_locked(ctx, defn.require_valid())
    return StandingExtended(
        name=name,
        extra_usd=done.spend.extra_usd,
        extra_turns=done.spend.extra_turns,
        over_budget=done.still,
        resumed=started,
        usage=usage.of_agent(ctx, key),
    )


def say(ctx: Ctx, name: str, text: str, actor: str | None = None) -> SayResult:
    """Deliver "Message from ACTOR to standing session `NAME`:", a blank line and TEXT into the
    running session, exactly once (queued first; a crash leaves it for the next ``say``);
    never spawns, but a suspended session is resumed first. Waits until the agent takes input.

    Raises ``BadInput`` for blank TEXT or a bad actor, ``Conflict`` while over budget (naming
    the budget and ``the-loop standing extend NAME``), ``NotRunning`` (naming
    ``the-loop standing start NAME``) when it is not running, ``Refused`` for a live pane
    the-loop did not start, ``Unavailable`` when tmux does not answer or the agent never
    became ready.
    """
    if not text.strip():
        raise BadInput("refusing to send an empty message")
    who = speaker(actor)
    with _locked(ctx, name):
        defn = definition(ctx, name).require_valid()
        pinning.require_here(ctx, name, pinning.command("say", name, "--text", text))
        standing_spend.refuse_over_budget(ctx, name)
        if standing_spend.hold_of(ctx, name).hold is not None:
            _start_locked(ctx, defn)  # suspended: resume its conversation first
        rec = _running_record(ctx, defn)
        agent = agent_of(defn, rec.conversation_id)
        body = f"Message from {who} to standing session `{name}`:\n\n{text}"
        with ctx.db.transaction() as tx:
            layer.enqueue(tx, agent, body, None)
        crash_point("after-enqueue")
        done = _flush(ctx, defn, agent)
    for chars in done.delivered:
        _emit(ctx, "standing.said", name, session_id=rec.conversation_id, actor=who, chars=chars)
    if done.held is not None:
        detail = layer.held_detail(done.held, name)
    else:
        detail = f"delivered to {name} ({len(text)} characters)"
    return SayResult(
        name=name,
        target=defn.target,
        actor=who,
        chars=done.delivered[-1] if done.delivered and done.held is None else 0,
        conversation_id=rec.conversation_id,
        held=done.held,
        detail=detail,
    )


def flush_held(ctx: Ctx, name: str) -> Flushed:
    """Deliver standing session NAME's messages that waited behind a dialog, under its lock."""
    with _locked(ctx, name):
        defn = definition(ctx, name)
        return _flush(ctx, defn, agent_of(defn, _running_record(ctx, defn).conversation_id))


def _flush(ctx: Ctx, defn: Definition, agent: Agent) -> Flushed:
    """Deliver the queued messages (see ``Flushed.held``); a gone agent drops them: not running."""

    def touch(tx: Any) -> None:
        store.update(tx, defn.name, last_message_at=time.time())

    try:
        return layer.flush(ctx, agent, revive=None, record=touch)
    except NotRunning:
        layer.drop_pending(ctx, agent)
        raise not_running(defn.name) from None


def _running_record(ctx: Ctx, defn: Definition) -> StandingRecord:
    rec = store.get(ctx.db.connect(), defn.name)
    probe = panes.probe(ctx, defn.target)
    if probe is Probe.UNKNOWN:
        raise Unavailable(f"tmux did not answer about {defn.target}")
    if probe is not Probe.LIVE:
        raise not_running(defn.name)
    if rec is None or rec.status is StandingStatus.stopped:
        raise _foreign(ctx, defn.target)
    return rec


# --- list and the daemon's hooks ------------------------------------------------------------


def autostart(ctx: Ctx, cancelled: Callable[[], bool] = lambda: False) -> list[StartOutcome]:
    """For the daemon, after the service is up: start every auto-start session (declared
    ``autoStart`` and created ``auto_start``, not a suspended one) when ``standing.enabled``;
    never raises for one session (failures are outcomes ``failed``). Once CANCELLED answers
    true (the daemon is stopping) no further session is started."""
    if not ctx.config.standing.enabled:
        return []
    names = [n for n in auto_start_names(ctx) if pinning.startable_here(ctx, n)]
    out: list[StartOutcome] = []
    for name in names:
        if cancelled():
            break
        if not standing_spend.suspended(ctx, name):
            out.append(_start_captured(ctx, name))
    return out


def report_gone(ctx: Ctx, name: str) -> bool:
    """Tell once that running standing session NAME's agent is gone though nobody stopped it
    (it crashed or was killed, or its tmux session vanished): its record ``stopped`` (so the
    next ``start`` resumes the conversation, and a ``say`` is refused until then: a say never
    starts one), its attention ``exited``, which closes a prompt it waited on (unless its
    harness said so first), and ``standing.exited``. Looked at again under NAME's lock; an
    agent the spend policy holds was stopped on purpose, and one pinned to another node is
    that node's to tell. True when told now."""
    key = standing_key(name)
    with _locked(ctx, name):
        conn = ctx.db.connect()
        rec = store.get(conn, name)
        if rec is None or rec.status is not StandingStatus.running:
            return False
        if pinning.elsewhere(ctx, name, rec) is not None or usage_store.holds_of(conn, [key]):
            return False
        pane = panes.probe(ctx, standing_target(name))
        if pane not in (Probe.DEAD, Probe.ABSENT):
            return False
        why = "the harness exited" if pane is Probe.DEAD else "its tmux session vanished"
        rule = f"{why}; `the-loop standing start {name}` resumes its conversation"
        with ctx.db.transaction() as tx:
            store.update(tx, name, status=StandingStatus.stopped)
            attention_store.set_state(
                tx, key, attention_store.EXITED, attention_store.CRASH_SIGNAL, rule,
                now=time.time(), standing=name, source=SOURCE,
            )  # fmt: skip
    _emit(ctx, "standing.exited", name, session_id=rec.conversation_id, pane=pane.value)
    return True


def stop_all(ctx: Ctx) -> list[StopOutcome]:
    """For ``the-loop stop``: stop every standing session recorded as running on this node;
    never raises for one session (failures are outcomes ``failed``)."""
    running = [
        rec.name
        for rec in store.list_records(ctx.db.connect())
        if rec.status is StandingStatus.running and pinning.elsewhere(ctx, rec.name, rec) is None
    ]
    return [_stop_captured(ctx, name) for name in running]


# --- plumbing -------------------------------------------------------------------------------


def _locked(ctx: Ctx, name: str) -> ExitStack:
    return standing_spend.locked(ctx, name)


def _emit(ctx: Ctx, type_: str, name: str, **payload: Any) -> None:
    ev.emit(ctx.db, type_, source=SOURCE, standing=name, **payload)
