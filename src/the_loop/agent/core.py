"""The agent-session layer: how an agent session is started, resumed, fed, probed and stopped.

Work-item sessions and standing sessions are policies on top of these functions (what to
start, when, with which prompt); this module is the one place that knows how, for every runner.

- ``start``: a fresh conversation with its first prompt.
- ``resume``: the recorded conversation, checked alive after ``tmux.resumeProbeSeconds`` (or
  as soon as its harness's ready pattern shows); when it dies, a fresh conversation with the
  policy's fallback prompt.
- ``enqueue`` + ``flush``: every prompt is queued in the database (once per delivery id) and
  delivered in order, exactly once even across a crash (two-phase staged paste under tmux).
- The delivery gate (``dialog``): while the agent shows a dialog (a pending question or
  permission prompt), nothing is pasted into its pane; its prompts wait in the queue, in order,
  and ``release_held`` delivers them once the dialog is gone (each kind of session registers
  how with ``on_release``). Only an answer reaches a dialog (``the_loop.agent.attention.service``).
  A person's unsent text in the agent's input box holds them the same way (``draft``), until
  it is sent or cleared.
- ``terminate``, ``kill``, ``probe``, ``screen``, ``owned``.

Ownership: the layer marks every tmux target it spawns with the agent's key and checks the mark
before it pastes into, signals or kills a target; a foreign occupant is refused, never touched.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from typing import TYPE_CHECKING

from the_loop import events as ev
from the_loop.agent import kinds, submit
from the_loop.agent.attention import screen as screen_reading
from the_loop.agent.attention.spawn import note_delivered
from the_loop.agent.model import (
    BEHIND_DRAFT,
    CANNOT_WORK,
    Agent,
    AgentKind,
    Flushed,
    Resumed,
    Started,
    held_detail,
)
from the_loop.agent.runners import adapter_for, foreign_occupant, runner_for
from the_loop.errors import LoopError, SpawnFailed, Unavailable
from the_loop.faults import crash_point
from the_loop.refs import new_session_id
from the_loop.runner import Answer, Killed, Probe, TerminateReport
from the_loop.store import attention as attention_store
from the_loop.store import prompts as queue
from the_loop.store.conn import Connection

if TYPE_CHECKING:
    from the_loop.context import Ctx

log = logging.getLogger(__name__)

Revive = Callable[[], None]
"""What a policy does when its agent is found gone before a delivery (respawn it), or None
when the policy never spawns for a delivery (the delivery is refused)."""


def hold(ctx: Ctx, keys: list[str]) -> ExitStack:
    """Hold the processing locks of KEYS (sorted, so two holders never deadlock)."""
    stack = ExitStack()
    for key in sorted(set(keys)):
        shared = ctx.db.item_lock(key)  # several nodes: a lock in the database
        stack.enter_context(ctx.runners.locks.hold(key) if shared is None else shared)
    return stack


# --- start / resume -------------------------------------------------------------------------


def start(ctx: Ctx, agent: Agent, prompt: str | None, session_id: str | None) -> Started:
    """Start a fresh conversation SESSION_ID for AGENT whose first message is PROMPT.

    A headless runner consumes PROMPT in its first run (``took_prompt``); an interactive one
    starts the harness without it, and the caller delivers it from the queue like any other
    message (exactly once, never through the world-readable argv). Raises ``Refused`` (a live
    occupant the-loop did not start), ``Unavailable`` (tmux not answering), ``SpawnFailed``,
    ``UnsupportedRunner``.
    """
    runner = runner_for(agent)
    given = prompt if runner.takes_first_prompt else None
    learned = runner.launch(ctx, agent, given, session_id, resume=False)
    agent.conversation_id = learned
    return Started(conversation_id=learned, took_prompt=given is not None)


def resume(ctx: Ctx, agent: Agent, fallback: str | None) -> Resumed:
    """Resume AGENT's recorded conversation; when there is none, it does not stay alive, or
    resuming is switched off (``tmux.resumeOnRespawn``), start a fresh one with FALLBACK.

    A live occupant that carries AGENT's mark is left running (``Refused`` is not raised for
    it: the agent is already there); a foreign one raises ``Refused``.
    """
    previous = agent.conversation_id
    runner = runner_for(agent)
    detail = "no conversation recorded" if previous is None else "resuming is switched off"
    attempted = previous is not None and ctx.config.tmux.resume_on_respawn
    if previous is not None and attempted:
        try:
            agent.conversation_id = (
                runner.launch(ctx, agent, None, previous, resume=True) or previous
            )
        except SpawnFailed as exc:
            detail = exc.message
        else:
            if runner.stays_alive(ctx, agent, ctx.config.tmux.resume_probe_seconds):
                _revived(ctx, agent)
                return Resumed(True, True, agent.conversation_id, previous)
            detail = f"the resumed conversation {previous} exited at once"
    fresh = new_session_id()
    agent.conversation_id = runner.launch(ctx, agent, fallback, fresh, resume=False)
    _revived(ctx, agent)
    return Resumed(False, attempted, agent.conversation_id, previous, detail)


def _revived(ctx: Ctx, agent: Agent) -> None:
    """AGENT runs again, a new process: what its old one waited on no longer holds — a
    ``blocked`` that said it was gone or could not work (the key may be there now), a dialog
    it showed. It waits for input: what is queued for it is delivered next, and its delivery,
    hook or screen says when it works (a harness that reports only finished turns, as Codex
    does, would otherwise read ``working`` while it sat idle)."""
    with ctx.db.transaction() as tx:
        row = attention_store.get(tx, agent.key)
        if row is not None and row.state in attention_store.NEEDS_PERSON:
            attention_store.set_state(
                tx,
                agent.key,
                attention_store.WAITING,
                "spawn",
                "the agent was started again and waits for input",
                now=time.time(),
                source="agent",
            )


# --- deliver --------------------------------------------------------------------------------


def enqueue(tx: Connection, agent: Agent, prompt: str, delivery_id: str | None) -> bool:
    """Queue PROMPT for AGENT in transaction TX; False when DELIVERY_ID was queued already."""
    return queue.add(tx, agent.key, prompt, delivery_id) is not None


def flush(
    ctx: Ctx,
    agent: Agent,
    revive: Revive | None,
    record: Callable[[Connection], None] | None = None,
    on_delivered: Callable[[int], None] | None = None,
) -> Flushed:
    """Deliver AGENT's queued prompts in order, each exactly once, even across a crash.

    REVIVE is called when the agent is found gone (a work item respawns it); without one, a
    gone agent raises ``NotRunning``. RECORD runs in the transaction that marks each prompt
    delivered (the policy's own bookkeeping); ON_DELIVERED gets each delivered prompt's size
    after that commit.
    """
    done = Flushed()
    runner = runner_for(agent)
    for item in queue.pending(ctx.db.connect(), agent.key):
        held = dialog(ctx, agent)
        if held is None and not done.delivered:  # the next pastes follow one seen taken
            held = draft(ctx, agent)
        if held is not None:
            done.held = held
            _report_held(ctx, agent, held, item)
            break
        began = time.time()
        runner.deliver(ctx, agent, item, revive)
        crash_point("after-paste")
        with ctx.db.transaction() as tx:
            queue.mark(tx, item.seq, queue.PromptStatus.delivered)
            note_delivered(ctx, tx, agent, began)
            if record is not None:
                record(tx)
        done.delivered.append(len(item.text))
        if on_delivered is not None:
            on_delivered(len(item.text))
    if done.held != BEHIND_DRAFT:
        ctx.drafts.discard(agent.key)
    return done


def dialog(ctx: Ctx, agent: Agent) -> str | None:
    """Why nothing may be pasted into AGENT now: the dialog it shows — a pending question or
    permission prompt (its attention waits on a person), a ``blocked`` that holds (a sign-in
    screen, recorded or on the screen right now by the harness's ``blockedPatterns``; a turn
    that failed for want of a login or credit: ``attention_store.holds``), or (harnesses read
    from the screen) a prompt its screen shows right now by the harness's patterns; None when
    it shows none. Any other ``blocked`` (a rate limit, the harness exited) holds nothing: the
    next message is the retry, or restarts the agent."""
    row = attention_store.get(ctx.db.connect(), agent.key)
    if row is not None and attention_store.holds(row):
        return f"{CANNOT_WORK} ({row.prompt.text if row.prompt else 'blocked'})"
    if row is not None and row.state in attention_store.HUMAN:
        shown = row.prompt
        what = "a question" if row.state == attention_store.NEEDS_INPUT else "a permission prompt"
        return f"held behind {what}" + (f" ({shown.id})" if shown is not None else "")
    if agent.runner != "tmux" or agent.target is None:
        return None
    settings = ctx.config.attention_of(agent.harness)
    read = settings.signals in screen_reading.READ
    patterns = [*settings.permission_patterns, *settings.question_patterns] if read else []
    if not patterns and not settings.blocked_patterns:
        return None
    capture = ctx.runners.tmux.capture(agent.tmux_target, 60)
    tail = screen_reading.tail_of(capture.text) if capture.ok else ""
    if any(re.search(pattern, tail) for pattern in patterns):
        return "held behind a dialog on the agent's screen"
    # what the screen says right now, before the attention pass has read it: a sign-in
    # screen (the first prompt of an agent with no login)
    crashed = row is not None and row.signal == attention_store.CRASH_SIGNAL  # restarts it
    stuck = None if crashed else screen_reading.blocked(tail, settings)
    if stuck is not None and not stuck.rule.startswith(attention_store.PASSING_FAILURE):
        return f"{CANNOT_WORK} ({stuck.text})"
    return None


DRAFT_LOOK_SECONDS = 1.0
"""How often the daemon looks again at an input box whose draft holds a delivery: nothing
reports a box cleared, and a hook's report of a draft sent wakes the pass sooner."""


def draft(ctx: Ctx, agent: Agent) -> str | None:
    """Why nothing may be pasted into AGENT now although it shows no dialog: its input box
    holds text a person typed or pasted there and has not sent (at ``sessions attach`` or the
    browser terminal). A paste would join that text and its Enter send both as one message, so
    the delivery waits until the person sends or clears it (decision 0101); the-loop never
    sends or erases it. None when the box holds none (or the agent has exited: the draft on
    its last screen went with it, and the delivery starts it again), or the adapter cannot tell a
    draft from the hints it draws there (``HarnessAdapter.draft``), or the box holds the
    message the-loop delivered last (Claude Code puts back the message of a turn a person
    interrupted; a long one folded to a label, which cannot be told from a person's paste).
    That message is not a person's draft: the next one joins it, as before."""
    if agent.runner != "tmux" or agent.target is None:
        return None
    adapter = adapter_for(ctx, agent.harness, agent.args)
    if not adapter.reads_input_box:
        return None
    capture = ctx.runners.tmux.live_capture(agent.tmux_target, screen_reading.SCREEN_LINES,
                                            escapes=True)  # fmt: skip
    box = adapter.draft(capture.text) if capture.ok else None  # an exited agent's is gone
    if box is None:
        return None
    last = queue.last_text(ctx.db.connect(), agent.key)
    if last is not None and (box.folded or submit.shows(box.held, last)):
        return None  # its label does not say whose a folded paste is: taken for the-loop's
    return BEHIND_DRAFT


def draft_waits(ctx: Ctx, before: float) -> list[tuple[int, str]]:
    """The waits behind a person's draft (the held prompt's seq, its agent) that began at
    BEFORE or earlier and were not told yet (``store.prompts.mark_told``), of the agents whose
    last delivery in this process found a draft (``ctx.drafts``: not one a dialog holds now,
    nor another node's agent)."""
    due = queue.waits_due(ctx.db.connect(), BEHIND_DRAFT, before) if ctx.drafts else []
    return [(seq, key) for seq, key in due if key in ctx.drafts]


def _report_held(ctx: Ctx, agent: Agent, why: str, item: queue.QueuedPrompt) -> None:
    """Record and report (``session.held``) that ITEM waits for WHY; a wait behind a draft,
    which the daemon looks at again every second, only the first time."""
    with ctx.db.transaction() as tx:
        noted = queue.note_held(tx, item.seq, why)
    if why == BEHIND_DRAFT:
        ctx.drafts.add(agent.key)
        if not noted:
            return
    names = agent.event_names
    ev.emit(
        ctx.db, "session.held", source="agent", **names, delivery_id=item.delivery_id, reason=why
    )


Release = Callable[["Ctx", str], None]
"""How a kind of session delivers the held prompts of its agent KEY (``on_release``)."""
_RELEASE: dict[AgentKind, Release] = {}


def on_release(kind: AgentKind, deliver: Release) -> None:
    """Register how sessions of KIND deliver their held prompts once their dialog is gone."""
    _RELEASE[kind] = deliver


def release_held(ctx: Ctx) -> int:
    """Deliver the prompts held behind dialogs that are gone now (a pass of the daemon); how
    many agents' delivery failed (left queued for the next pass to try again). An agent still
    showing a dialog, or held by its spend policy, is left alone."""
    kinds.load()
    conn = ctx.db.connect()
    failed = 0
    pending = queue.agents_with_pending(conn)
    ctx.drafts &= set(pending)  # not those closed, or whose queue was dropped
    for key in pending:
        row = attention_store.get(conn, key)
        if row is None or row.state in (*attention_store.HELD, *attention_store.NEEDS_PERSON):
            continue
        deliver = _RELEASE.get(AgentKind.of(key))
        if deliver is None:
            continue
        try:
            deliver(ctx, key)
        except LoopError as exc:  # left queued: the next pass tries again
            log.debug("held prompts of %s not delivered yet: %s", key, exc.message)
            failed += 1
    return failed


def waiting_detail(ctx: Ctx, key: str, where: str) -> str:
    """What a person is told of the messages to agent KEY (in WHERE: a session id, a standing
    name) not delivered yet: how many, and what holds them (``held_detail``); "" when none."""
    count, why = queue.waiting(ctx.db.connect(), key)
    if not count:
        return ""
    what = f"{count} message{'s' if count > 1 else ''} not delivered yet"
    return f"{what}: {held_detail(why, where)}" if why else f"{what}: being delivered"


def drop_pending(ctx: Ctx, agent: Agent) -> int:
    """Mark AGENT's undelivered prompts ``dropped`` (its agent is gone and is not revived)."""
    left = queue.pending(ctx.db.connect(), agent.key)
    with ctx.db.transaction() as tx:
        for item in left:
            queue.mark(tx, item.seq, queue.PromptStatus.dropped)
    return len(left)


# --- look and stop --------------------------------------------------------------------------


def probe(ctx: Ctx, agent: Agent) -> str:
    """``live``, ``dead``, ``absent``, ``unknown`` (tmux) or ``headless`` (process runner)."""
    return runner_for(agent).probe(ctx, agent)


def screen(ctx: Ctx, agent: Agent, lines: int = 200) -> str:
    """The last LINES of the agent's screen (tmux) or transcript (process runner)."""
    return runner_for(agent).screen(ctx, agent, lines)


def owned(ctx: Ctx, agent: Agent) -> bool | None:
    """True when AGENT's tmux target carries AGENT's mark, False when it is absent or carries
    another (or none), None when tmux did not answer; True for headless agents."""
    if agent.runner != "tmux":
        return True
    found = ctx.runners.tmux.ownership(agent.tmux_target)
    if found.answer is Answer.ABSENT:
        return False
    if not found.ok:
        return None
    return found.owner == agent.owner


def refuse_foreign(ctx: Ctx, agent: Agent) -> None:
    """Raise ``Refused`` (naming how to inspect it) unless AGENT's live target is its own;
    ``Unavailable`` when tmux cannot tell."""
    mine = owned(ctx, agent)
    if mine is None:
        raise Unavailable(f"tmux did not answer about {agent.target}")
    if not mine and ctx.runners.tmux.probe(agent.tmux_target) is Probe.LIVE:
        raise foreign_occupant(ctx, agent)


def terminate(ctx: Ctx, agent: Agent) -> TerminateReport:
    """Terminate AGENT's harness (SIGTERM, then SIGKILL after the grace); the pane stays as a
    dead record. A live target that is not AGENT's own is refused (reported, not signalled)."""
    grace = ctx.config.tmux.harness_kill_grace_seconds
    report = ctx.runners.tmux.terminate(agent.tmux_target, grace, owner=agent.owner)
    if report.refused and report.probe is Probe.LIVE:
        report = replace(report, refused=foreign_occupant(ctx, agent).message)
    forget_ready(ctx, agent)
    return report


def kill(ctx: Ctx, agent: Agent, timeout: float = 3.0) -> Killed:
    """Kill AGENT's tmux session and wait (up to TIMEOUT) until tmux says it is gone. A live
    target that is not AGENT's own is refused."""
    target = agent.tmux_target
    tmux = ctx.runners.tmux
    if owned(ctx, agent) is False and tmux.probe(target) is Probe.LIVE:
        return Killed(
            target=target,
            answer=Answer.OCCUPIED,
            probe=Probe.LIVE,
            detail=foreign_occupant(ctx, agent).message,
        )
    result = tmux.kill_session(target)
    deadline = time.monotonic() + timeout
    while result.probe is not Probe.ABSENT and time.monotonic() < deadline:
        time.sleep(0.05)
        result = Killed(target=target, probe=tmux.probe(target))
    forget_ready(ctx, agent)
    return result


def forget_ready(ctx: Ctx, agent: Agent) -> None:
    """Forget that AGENT was seen ready (it was spawned, respawned or stopped)."""
    if agent.target is not None:
        ctx.ready.discard(agent.target)
