"""Attention: which agent waits for a person, on what, since when — and the answers to it.

The core functions every surface calls: ``list_attention`` (the sessions waiting on a person,
oldest first: ``the-loop attention``, ``GET /api/v1/attention``, MCP ``list_attention``),
``state_of`` (the column of the session lists), ``explain`` (the signal and rule that decided)
and ``answer_permission`` (``the-loop allow``/``deny`` comments, ``sessions allow|deny``,
``POST /api/v1/sessions/{id}/permission``). An answer is taken only while that very prompt is
pending, the first one wins, and a stale one is refused with the reason.

A harness that reports through hooks (Claude Code) receives the answer through its waiting
permission hook (``the_loop.hook``); any other gets the keys its prompt expects
(``attention.harnesses.<h>.allowKeys``/``denyKeys``), sent only after the screen was checked to
still show the prompt.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Literal

from the_loop.context import Ctx
from the_loop.engine import AnswerCommand
from the_loop.errors import BadInput, Conflict, LoopError, NotFound, Unavailable
from the_loop.refs import WorkItemRef, attach_command, names_work_item
from the_loop.store import attention as store
from the_loop.store import sessions as session_store
from the_loop.store import standing as standing_store
from the_loop.store.conn import Connection
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.wire import UtcDatetime, Wire

log = logging.getLogger(__name__)
Decision = Literal["allow", "deny"]
_PROMPT_ID_RE = re.compile(r"\Ap[0-9a-f]{5}\Z")


class _View(Wire):
    """The output contract: camelCase keys, ISO 8601 UTC times (``the_loop.wire``)."""


class PromptView(_View):
    """The question or permission an agent waits on."""

    id: str
    kind: str
    tool: str = ""
    input: str = ""
    text: str = ""
    choices: list[str] = []
    """The numbered choices of a one-question dialog (Claude Code's ``AskUserQuestion``), in
    order: ``{"choice": N}`` picks the Nth; empty for any other prompt."""
    detail: str = ""
    """What the notices quote of it: the text, and under it the input a screen pattern read
    (the command a Gemini dialog asks to run)."""
    created_at: UtcDatetime
    pending: bool
    open: bool
    """The agent still waits on it: not closed (``pending``, or answered and the answer not
    taken yet: its hook ended, and the dialog waits in the agent's terminal)."""
    decision: str | None = None
    answered_by: str | None = None
    answered_via: str | None = None
    outcome: str | None = None
    untaken: bool = False
    """The decision was recorded, but the agent never confirmed it took it: its wait ended
    first (its dialog closed in the agent's terminal, or the agent ended); the outcome is then
    ``moved-on``."""
    notice_posted_at: UtcDatetime | None = None


class AttentionView(_View):
    """One agent's attention."""

    agent: str
    kind: Literal["work-item", "standing"]
    work_item: str | None = None
    standing: str | None = None
    session_id: str | None = None
    harness: str = ""
    requester: str = ""
    state: str
    since: UtcDatetime
    waiting_seconds: float
    signal: str
    rule: str
    last_message: str = ""
    prompt: PromptView | None = None


class SessionAttention(_View):
    """A session's attention as every session object carries it (``sessions list``/``show``,
    ``standing list``, the API, MCP): the state, since when, what decided it, the pending
    prompt and the agent's last message. Nothing that moves by itself (no ``waitingSeconds``),
    so the same object reads the same from every surface."""

    state: str
    since: UtcDatetime
    signal: str
    rule: str
    last_message: str = ""
    prompt: PromptView | None = None


class Answered(_View):
    """An answer taken: which prompt, what, by whom, through what."""

    agent: str
    prompt_id: str
    decision: Decision
    actor: str
    via: str
    tool: str = ""
    input: str = ""
    delivered: Literal["hook", "keys"]


def _when(ts: float) -> datetime:
    return datetime.fromtimestamp(ts, UTC)


def _prompt_view(p: store.Prompt) -> PromptView:
    return PromptView(
        id=p.id,
        kind=p.kind,
        tool=p.tool,
        input=p.input,
        text=p.text,
        choices=p.choices or [],
        detail=p.detail,
        created_at=_when(p.created_at),
        pending=p.pending,
        open=p.closed_at is None,
        decision=p.decision,
        answered_by=p.actor,
        answered_via=p.via,
        outcome=p.outcome,
        untaken=p.untaken,
        notice_posted_at=_when(p.notice_at) if p.notice_at is not None else None,
    )


def view_of(row: store.Row, now: float | None = None, state: str | None = None) -> AttentionView:
    """ROW as the surfaces show it (STATE overrides the stored one, e.g. ``exited``)."""
    standing = row.agent.startswith(store.STANDING_PREFIX)
    now = time.time() if now is None else now
    return AttentionView(
        agent=row.agent,
        kind="standing" if standing else "work-item",
        work_item=row.work_item,
        standing=row.standing
        or (row.agent.removeprefix(store.STANDING_PREFIX) if standing else None),
        session_id=None if standing else row.agent,
        harness=row.harness,
        requester=row.requester,
        state=state or row.state,
        since=_when(row.since),
        waiting_seconds=round(max(0.0, now - row.since), 3),
        signal=row.signal,
        rule=row.rule,
        last_message=row.last_message,
        prompt=_prompt_view(row.prompt) if row.prompt else None,
    )


def _live(conn: Connection, agents: list[str]) -> set[str]:
    """Which of AGENTS are live sessions (a work-item session ``live`` in its record, a
    standing session running)."""
    live = session_store.live_among(
        conn, [a for a in agents if not a.startswith(store.STANDING_PREFIX)]
    )
    for agent in agents:
        if agent.startswith(store.STANDING_PREFIX):
            rec = standing_store.get(conn, agent.removeprefix(store.STANDING_PREFIX))
            if rec is not None and rec.status.value == "running":
                live.add(agent)
    return live


def list_attention(ctx: Ctx) -> list[AttentionView]:
    """Every live session waiting on a person (needs-input, needs-permission, blocked), oldest
    first."""
    now = time.time()
    conn = ctx.db.connect()
    rows = store.rows(conn, states=store.NEEDS_PERSON)
    live = _live(conn, [r.agent for r in rows])
    return [view_of(row, now) for row in rows if row.agent in live]


def waiting_counts(ctx: Ctx) -> dict[str, int]:
    """How many live sessions wait on a person, by state (what ``status`` shows)."""
    conn = ctx.db.connect()
    found = store.agents_in(conn, store.NEEDS_PERSON)
    live = _live(conn, [agent for agent, _ in found])
    out: dict[str, int] = {}
    for agent, state in found:
        if agent in live:
            out[state] = out.get(state, 0) + 1
    return out


def of_sessions(ctx: Ctx, agents: list[tuple[str, bool]]) -> dict[str, SessionAttention | None]:
    """The attention of each (agent key, live) in AGENTS: ``exited`` (and no prompt) for a
    session that is not live, None when nothing was recorded."""
    found = {row.agent: row for row in store.rows(ctx.db.connect(), [a for a, _ in agents])}
    out: dict[str, SessionAttention | None] = {}
    for agent, live in agents:
        row = found.get(agent)
        out[agent] = None if row is None else _session_attention(row, live)
    return out


def _session_attention(row: store.Row, live: bool) -> SessionAttention:
    return SessionAttention(
        state=row.state if live else store.EXITED,
        since=_when(row.since),
        signal=row.signal,
        rule=row.rule,
        last_message=row.last_message,
        prompt=_prompt_view(row.prompt) if live and row.prompt else None,
    )


def column(ctx: Ctx, agents: list[tuple[str, bool]]) -> dict[str, str]:
    """The attention column of each (agent key, live) in AGENTS: its state, ``exited`` for
    a session that is not live, ``-`` when nothing was recorded."""
    return {a: v.state if v else "-" for a, v in of_sessions(ctx, agents).items()}


def agent_key(ctx: Ctx, ref: str) -> str:
    """The agent key REF names: a work item ref (its live, else latest session), a session
    id, ``standing:NAME`` or a standing session's name. ``NotFound`` otherwise."""
    conn = ctx.db.connect()
    if ref.startswith(store.STANDING_PREFIX):
        return ref
    if names_work_item(ref):
        item = WorkItemRef.parse(ref)
        rec: SessionRecord | None = session_store.live_for(conn, str(item))
        rec = rec or session_store.latest_for(conn, str(item))
        if rec is None:
            raise NotFound(f"no session for {item}")
        return rec.id
    if session_store.get(conn, ref) is not None or store.get(conn, ref) is not None:
        return ref
    if standing_store.get(conn, ref) is not None or store.get(conn, f"standing:{ref}"):
        return f"{store.STANDING_PREFIX}{ref}"
    raise NotFound(f"no session or standing session {ref!r}")


def not_started(rec: SessionRecord, state: str) -> bool:
    """Whether REC, whose attention reads STATE, has none to show: it is queued and its agent
    has not started (one held over budget says so)."""
    return rec.status is SessionStatus.queued and state not in store.HELD


def explain(ctx: Ctx, ref: str) -> AttentionView:
    """REF's attention with the signal and rule that decided it; ``NotFound`` when nothing
    was recorded for it."""
    key = agent_key(ctx, ref)
    conn = ctx.db.connect()
    row = store.get(conn, key)
    if row is None:
        raise NotFound(f"no attention recorded for {ref} yet")
    rec = session_store.get(conn, key)
    if rec is not None and not_started(rec, row.state):
        raise NotFound(
            f"{ref} is queued: its agent has not started, so nothing decided its attention yet"
            f" (`the-loop sessions show {ref}` says why it waits)"
        )
    return view_of(row)


def parse_prompt_id(text: str | None) -> str | None:
    """TEXT as a prompt id (``p`` and five hex digits), None when empty; ``BadInput`` else."""
    if text is None or not text.strip():
        return None
    value = text.strip().lower()
    if not _PROMPT_ID_RE.match(value):
        raise BadInput(f"invalid prompt id {text!r} (like p3fa91)")
    return value


def asker_of(ctx: Ctx, prompt: str) -> tuple[str, str, str]:
    """The agent that asked PROMPT (a prompt's id, as every notice and ``the-loop attention``
    show it): its key, which every answer takes as its ref; the name people know it by (its
    work item, or ``standing:NAME``); and the id, parsed. ``BadInput`` for no id or a malformed
    one, ``NotFound`` for an id no agent asked."""
    prompt_id = parse_prompt_id(prompt)
    if prompt_id is None:
        raise BadInput("give the prompt's id (like p3fa91): `the-loop attention` lists them")
    conn = ctx.db.connect()
    found = store.get_prompt(conn, prompt_id)
    if found is None:
        raise NotFound(f"no prompt {prompt_id} (`the-loop attention` lists the pending ones)")
    row = store.get(conn, found.agent)
    name = row.work_item if row is not None and row.work_item else found.agent
    return found.agent, name, prompt_id


def _stale(p: store.Prompt) -> str:
    if p.decision is None and p.actor is not None:
        return f"prompt {p.id} was already answered by {p.actor} via {p.via}; this answer is stale"
    if p.decision is not None:
        done = "allowed" if p.decision == "allow" else "denied"
        return f"prompt {p.id} was already {done} by {p.actor} via {p.via}; this answer is stale"
    return f"prompt {p.id} is no longer pending ({p.outcome or 'closed'}); this answer is stale"


CONFIRM_SECONDS = 10.0
"""How long an answer through a harness's hook waits for the hook to take it."""


def answer_permission(
    ctx: Ctx,
    ref: str,
    decision: Decision,
    actor: str,
    via: str,
    prompt_id: str | None = None,
) -> Answered:
    """Answer the permission prompt PROMPT_ID of REF's agent. Without PROMPT_ID (a bare
    ``allow``/``deny``) only when exactly one prompt is pending and it is the one the latest
    notice quoted; otherwise ``Conflict`` listing the pending prompts. ``Conflict`` too when
    the prompt is a question, or was answered or closed before (the first answer wins);
    ``NotFound`` for an unknown REF. Reported done only when the dialog took the answer (the
    hook confirmed it, or the screen no longer shows it); ``Conflict`` when the dialog was
    answered in the agent's terminal before the hook took it, ``Unavailable`` otherwise."""
    key = agent_key(ctx, ref)
    conn = ctx.db.connect()
    row = store.get(conn, key)
    target = _target(conn, ref, key, prompt_id, "permission", via)
    if target.kind != "permission":
        raise Conflict(
            f"{ref} asks a question ({target.id}), not a permission: answer it with "
            f"`the-loop answer {target.id} …` or `the-loop sessions answer`"
        )
    harness = row.harness if row else ""
    hooks = ctx.config.attention_of(harness or "").signals == "hooks" or (
        row is not None and row.signal.startswith("claude-hook:")
    )
    if hooks:
        with ctx.db.transaction() as tx:
            taken = store.answer(tx, target.id, decision, actor, via, time.time())
        if not taken:
            raise Conflict(_stale(store.get_prompt(conn, target.id) or target))
        _confirmed(ctx, target)
    else:
        _answer_by_keys(ctx, key, harness, target, decision, actor, via)
    return Answered(
        agent=key,
        prompt_id=target.id,
        decision=decision,
        actor=actor,
        via=via,
        tool=target.tool,
        input=target.input,
        delivered="hook" if hooks else "keys",
    )


def _target(
    conn: Connection, ref: str, key: str, prompt_id: str | None, kind: str, via: str
) -> store.Prompt:
    """The prompt an answer to REF's agent KEY is for: PROMPT_ID, which must be KEY's and
    pending; without one, the single pending prompt the latest notice quoted. A refusal says
    how to name the prompt where the answer came from (VIA)."""
    if prompt_id:
        named = store.get_prompt(conn, prompt_id)
        if named is None or named.agent != key:
            raise Conflict(f"{ref} has no prompt {prompt_id}")
        if not named.pending:
            raise Conflict(_stale(named))
        return named
    pending = store.pending_prompts(conn, key)
    if not pending:
        raise Conflict(
            f"{ref} has no pending {'permission prompt' if kind == 'permission' else kind}"
        )
    noticed = store.latest_noticed(conn, key)
    if len(pending) == 1 and noticed is not None and noticed.id == pending[0].id:
        return pending[0]
    listed = "; ".join(f"{p.id} ({_named(p)})" for p in pending)
    why = "no notice quoted it" if len(pending) == 1 else f"{len(pending)} prompts are pending"
    raise Conflict(
        f"{ref}: name the prompt you answer ({why}): {_naming(via, kind)}; pending: {listed}"
    )


def _naming(via: str, kind: str) -> str:
    """How an answer that came through VIA names its prompt: an option on the command line, a
    field of the API's body, the id after the verb in a comment or a Slack reply."""
    if via == "cli":
        return "--prompt <id>"
    if via in ("api", "dashboard"):
        return '"promptId": "<id>"'
    return "allow <id> or deny <id>" if kind == "permission" else "answer <id> …"


def _named(prompt: store.Prompt) -> str:
    """PROMPT in a line: its tool (or kind) and its text, the tool said once (a hook's text
    already starts with it: ``Bash: make deploy``)."""
    head, text = prompt.tool or prompt.kind, _clip(" ".join(prompt.detail.split()))
    return text if text.startswith(f"{head}:") else f"{head}: {text}"


def _clip(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _confirmed(ctx: Ctx, target: store.Prompt) -> None:
    """Wait until the harness's hook took the answer to TARGET (it closes the prompt as
    ``answered``); ``Conflict`` when the prompt closed otherwise (its dialog was answered in
    the agent's terminal first), ``Unavailable`` when it did not close within
    ``CONFIRM_SECONDS``."""
    deadline = time.monotonic() + CONFIRM_SECONDS
    while True:
        found = store.get_prompt(ctx.db.connect(), target.id)
        if found is not None and found.closed_at is not None:
            if found.outcome == "answered":
                return
            gone = found.outcome == store.GONE
            why = "the agent stopped" if gone else "its dialog was closed in the agent's terminal"
            raise Conflict(
                f"the answer to {target.id} is recorded, but the agent never confirmed it took "
                f"it: the prompt closed first ({found.outcome}: {why})"
            )
        if time.monotonic() >= deadline:
            raise Unavailable(
                f"the answer to {target.id} is recorded, but the agent has not taken it yet: "
                "no hook waits on it (the hook ended, or the daemon is not running); it "
                "applies if the hook asks again, else answer in the agent's terminal "
                f"(`{attach_command(target.agent)}`, or the Terminal tab of its page)"
            )
        time.sleep(0.05)


class QuestionAnswered(_View):
    """A question answered: which prompt, with what, by whom, through what."""

    agent: str
    prompt_id: str
    answer: str
    actor: str
    via: str


def answer_question(
    ctx: Ctx,
    ref: str,
    actor: str,
    via: str,
    *,
    choice: int | None = None,
    text: str | None = None,
    prompt_id: str | None = None,
) -> QuestionAnswered:
    """Answer the question REF's agent asks (PROMPT_ID; bare only as for permissions) with a
    numbered CHOICE of its dialog or a typed TEXT, by the keys the dialog needs; reported done
    once the screen no longer shows it. ``BadInput`` without exactly one of CHOICE and TEXT;
    ``Conflict`` for a permission, a stale or closed question; ``NotFound`` for REF."""
    # lazy: typing an answer loads the screen reader; the read-only surfaces do not need it
    from the_loop.agent.attention.answer import keys_for, paste_of, type_answer

    if (choice is None) == (not (text or "").strip()):
        raise BadInput("give the number of a choice or a typed answer, one of them")
    key = agent_key(ctx, ref)
    target = _target(ctx.db.connect(), ref, key, prompt_id, "question", via)
    if target.kind != "question":
        raise Conflict(f"{ref} waits on a permission ({target.id}): allow or deny it")
    typed = keys_for(target, choice, text, paste_of(ctx, key))
    with _claimed(ctx, target, actor, via) as claimed:
        type_answer(ctx, key, target, typed)
    now = time.time()
    with ctx.db.transaction() as tx:
        before = store.get_prompt(tx, target.id)
        if not store.answer_question(tx, target.id, actor, via, typed.label, claimed, now):
            raise Conflict(_stale(before or target))
        if before is not None and before.closed_at is None:  # no hook has moved it on yet
            rule = f"question {target.id} answered by {actor} via {via}"
            store.set_state(tx, key, store.WORKING, "answer:keys", rule, now=now)
    return QuestionAnswered(
        agent=key, prompt_id=target.id, answer=typed.label, actor=actor, via=via
    )


def answer_command(ctx: Ctx, ref: str, command: AnswerCommand, actor: str, via: str) -> str:
    """Carry out an ``allow``/``deny``/``answer`` COMMAND written by ACTOR (a comment on a work
    item, a reply in a Slack thread) for REF's agent; what was answered. A command's answer that
    is a choice's number (up to two digits) picks that choice, any other text is typed. Raises
    as ``answer_permission`` and ``answer_question`` do."""
    if command.answer is not None:
        given = command.answer
        choice = int(given) if given.isdigit() and len(given) <= 2 else None
        text = None if choice is not None else given
        answered = answer_question(
            ctx, ref, actor, via, choice=choice, text=text, prompt_id=command.prompt_id
        )
        return f"{answered.prompt_id} ({answered.answer})"
    decision: Decision = "allow" if command.allow else "deny"
    done = answer_permission(ctx, ref, decision, actor, via, command.prompt_id)
    return f"{done.prompt_id} ({done.tool or 'prompt'})"


def history(ctx: Ctx, ref: str, limit: int = 100) -> list[PromptView]:
    """REF's prompts, newest first: what each asked, and who answered it, how and from where
    (``the-loop attention history``, ``GET /api/v1/attention/{ref}/history``)."""
    key = agent_key(ctx, ref)
    return [_prompt_view(p) for p in store.prompts_of(ctx.db.connect(), key, limit)]


def apply_timeouts(ctx: Ctx, now: float | None = None) -> int:
    """Apply ``attention.onTimeout`` to the prompts pending longer than
    ``answerTimeoutMinutes`` (0 waits forever), from hooks and the screen alike: ``deny``
    denies a permission like a person would (a question is left to wait); ``leave`` stops
    tracking the prompt (it stays at the agent, answerable in its terminal; nothing is
    delivered into the dialog meanwhile); ``wait`` does nothing. How many were handled."""
    settings = ctx.config.attention
    if settings.answer_timeout_minutes <= 0 or settings.on_timeout == "wait":
        return 0
    now = time.time() if now is None else now
    handled = 0
    for prompt in store.overdue(ctx.db.connect(), now - settings.answer_timeout_minutes * 60):
        if settings.on_timeout == "deny" and prompt.kind != "permission":
            continue
        handled += 1
        if settings.on_timeout == "leave":
            with ctx.db.transaction() as tx:
                store.close_prompt(tx, prompt.id, "timed-out", now)
            continue
        try:
            answer_permission(ctx, prompt.agent, "deny", "the-loop", "timeout", prompt.id)
        except (Conflict, NotFound, Unavailable) as exc:
            log.info("timeout of %s not applied yet: %s", prompt.id, exc.message)
    return handled


def next_timeout(ctx: Ctx) -> float | None:
    """When ``apply_timeouts`` has something to do next (``time.time()``); None: never, until
    a prompt opens."""
    settings = ctx.config.attention
    if settings.answer_timeout_minutes <= 0 or settings.on_timeout == "wait":
        return None
    deny = settings.on_timeout == "deny"
    opened = store.oldest_open(ctx.db.connect(), permissions=deny)
    return None if opened is None else opened + settings.answer_timeout_minutes * 60


@contextmanager
def _claimed(ctx: Ctx, target: store.Prompt, actor: str, via: str) -> Iterator[float]:
    """Hold TARGET for ACTOR/VIA while its answer's keys go out; yields when the claim was
    made. A hook or the screen that closes the prompt the moment the dialog takes the keys
    cannot take the answer's name from it (nor call the answer stale), and another answer
    meanwhile is refused (``Conflict``); keys not taken (a ``LoopError``) give it back."""
    claimed = time.time()
    with ctx.db.transaction() as tx:
        if not store.claim(tx, target.id, actor, via, claimed):
            raise Conflict(_stale(store.get_prompt(tx, target.id) or target))
    try:
        yield claimed
    except LoopError:
        with ctx.db.transaction() as tx:
            store.release(tx, target.id, actor, via, claimed)
        raise


def _answer_by_keys(
    ctx: Ctx,
    key: str,
    harness: str,
    target: store.Prompt,
    decision: Decision,
    actor: str,
    via: str,
) -> None:
    """Claim TARGET for ACTOR, type HARNESS's keys for DECISION, then record it (the claim
    comes first, as for a question: see ``_claimed``)."""
    with _claimed(ctx, target, actor, via) as claimed:
        _send_keys(ctx, key, harness, target, decision)
    done = "allowed" if decision == "allow" else "denied"
    with ctx.db.transaction() as tx:
        before = store.get_prompt(tx, target.id)
        store.decide(tx, target.id, decision, actor, via, claimed)
        # the screen that saw the dialog go has said what came after it (a denied Codex
        # waits at once): that is newer than this answer's guess
        if before is not None and before.closed_at is None:
            rule = f"{target.tool or 'the prompt'} {done} by {actor} via {via}"
            store.set_state(tx, key, store.WORKING, "answer:keys", rule, now=time.time())


def _send_keys(ctx: Ctx, key: str, harness: str, target: store.Prompt, decision: Decision) -> None:
    """Type the keys HARNESS's prompt expects, after checking the screen still shows it."""
    # lazy: the screen detector loads the agent layer; answers through hooks do not need it
    from the_loop.agent.attention.screen import answer_with_keys

    answer_with_keys(ctx, key, harness, target, decision)
