"""Notices of work-item sessions: tell the person who started a session, on its work item,
that its agent waits; and answer a wait from a comment.

After ``attention.notifyAfterSeconds`` in a wait (a question or a permission), one marked
comment is queued in the outbox: it quotes the question (or the tool and its input) and
mentions the requester. The notice is recorded on the wait's prompt in the same transaction,
so there is never more than one per wait. When the wait ends (answered, moved on, timed out) a
short follow-up says how. A message that has waited as long behind a person's unsent text in
the agent's input box is told once too (decision 0104). Registered with the attention pass
(``agent.attention.notice``) by ``work_items.kind``.
"""

from __future__ import annotations

import time

from the_loop.agent import draft_waits
from the_loop.agent.attention.service import answer_command
from the_loop.context import Ctx
from the_loop.engine import AnswerPermission
from the_loop.errors import BadInput, Conflict, NotFound, Unavailable
from the_loop.outbox import drain as outbox
from the_loop.refs import WorkItemRef
from the_loop.store import attention as store
from the_loop.store import prompts
from the_loop.text_safety import github_quote

QUOTE_LIMIT = 600


def _quote(text: str) -> str:
    """TEXT (what an agent shows: it may carry a stranger's words) as a quote that pings no
    one."""
    text = github_quote(text)
    clipped = text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + " …"
    return "\n".join(f"> {line}" if line else ">" for line in clipped.splitlines() or [""])


def notice_text(row: store.Row, prompt: store.Prompt, keywords: tuple[str, str, str]) -> str:
    """The notice of PROMPT on ROW's work item (KEYWORDS: the allow, deny and answer
    phrases)."""
    who = f"@{row.requester} " if row.requester else ""
    if prompt.kind == "permission":
        what = prompt.tool or "a tool"
        detail = prompt.detail
        return (
            f"{who}the agent of this item is waiting for your permission to run **{what}** "
            f"(prompt `{prompt.id}`):\n\n{_quote(detail)}\n\n"
            f"Reply `{keywords[0]} {prompt.id}` to let it run, or `{keywords[1]} {prompt.id}` "
            "to refuse."
        )
    if prompt.kind == "blocked":
        return (
            f"{who}the agent of this item cannot work (prompt `{prompt.id}`):\n\n"
            f"{_quote(prompt.text or 'blocked')}\n\n" + _blocked_advice(row)
        )
    question = prompt.text or row.last_message or "(no text)"
    return (
        f"{who}the agent of this item is waiting for your answer (prompt `{prompt.id}`):\n\n"
        f"{_quote(question)}\n\nReply `{keywords[2]} {prompt.id} <the number of a choice, or "
        "your answer>`. Other comments wait until the question is answered."
    )


def _blocked_advice(row: store.Row) -> str:
    """What a notice of ROW's ``blocked`` tells the requester to expect."""
    if row.signal == store.CRASH_SIGNAL:
        return ""
    if row.rule.startswith(store.PASSING_FAILURE):
        return "The API refused this turn; the next message is its retry."
    return (
        "It needs a login, a key or credit on the host that runs it (`the-loop doctor` checks "
        "each harness). The messages it could not take, and any new ones, are delivered once "
        "it can work again."
    )


def followup_text(prompt: store.Prompt) -> str:
    """The follow-up of a noticed prompt that is no longer pending."""
    if prompt.decision is not None:
        done = "allowed" if prompt.decision == "allow" else "denied"
        said = f"Prompt `{prompt.id}` was {done} {store.answered_by(prompt, str(prompt.actor))}"
        if prompt.untaken:
            return f"{said}, {store.not_taken(prompt)}."
        return f"{said}."
    if prompt.actor is not None:
        return f"Prompt `{prompt.id}` was answered {store.answered_by(prompt, prompt.actor)}."
    outcome = {
        "timed-out": "timed out without an answer through the-loop; it waits at the agent",
        "moved-on": "is no longer pending: the agent moved on",
        "superseded": "is no longer pending: the agent asked something else",
        store.GONE: "is no longer pending: the agent stopped before it was answered",
    }.get(prompt.outcome or "", "is no longer pending")
    return f"Prompt `{prompt.id}` {outcome}."


def notify_once(ctx: Ctx, now: float | None = None) -> int:
    """Queue the notices and follow-ups that are due; returns how many were queued."""
    if not ctx.config.github.enabled:
        return 0
    now = time.time() if now is None else now
    conn = ctx.db.connect()
    said = ctx.config.routing.keywords
    keywords = (said.allow, said.deny, said.answer)
    queued = 0
    for prompt in store.due_notices(conn, now - ctx.config.attention.notify_after_seconds):
        row = store.get(conn, prompt.agent)
        if row is None or row.work_item is None:
            continue
        ref = WorkItemRef.parse(row.work_item)
        with ctx.db.transaction() as tx:
            if store.mark_notice(tx, prompt.id, now):
                key = outbox.text_key("github", str(ref), "attention", prompt.id)
                text = notice_text(row, prompt, keywords)
                outbox.enqueue_comment(tx, ref, text, what="attention", key=key)
                queued += 1
    for prompt in store.due_followups(conn):
        row = store.get(conn, prompt.agent)
        if row is None or row.work_item is None:
            continue
        ref = WorkItemRef.parse(row.work_item)
        with ctx.db.transaction() as tx:
            if store.mark_followup(tx, prompt.id, now):
                key = outbox.text_key("github", str(ref), "attention-answered", prompt.id)
                outbox.enqueue_comment(tx, ref, followup_text(prompt), what="attention", key=key)
                queued += 1
    queued += _tell_draft_waits(ctx, now)
    if queued:
        outbox.wake(ctx)
    return queued


def draft_wait_text(row: store.Row) -> str:
    """The notice of a message that has waited behind a person's draft (decision 0104)."""
    who = f"@{row.requester} " if row.requester else ""
    return (
        f"{who}a message for the agent of this item is waiting: someone typed text into the "
        "agent's input box, in its terminal (`the-loop sessions attach`, or the terminal on "
        "its session page), and has not sent it. The-loop never sends or erases a person's "
        "text. The message is delivered, on its own, once that text is sent or cleared."
    )


def _tell_draft_waits(ctx: Ctx, now: float) -> int:
    """Queue one notice for each wait behind a draft that has lasted
    ``attention.notifyAfterSeconds``; how many."""
    conn = ctx.db.connect()
    queued = 0
    for seq, agent in draft_waits(ctx, now - ctx.config.attention.notify_after_seconds):
        row = store.get(conn, agent)
        if row is None or row.work_item is None:
            continue
        ref = WorkItemRef.parse(row.work_item)
        if ref.is_local:
            continue
        with ctx.db.transaction() as tx:
            if prompts.mark_told(tx, seq, now):
                key = outbox.text_key("github", str(ref), "draft-wait", str(seq))
                outbox.enqueue_comment(tx, ref, draft_wait_text(row), what="attention", key=key)
                queued += 1
    return queued


def answer_from_comment(
    ctx: Ctx, action: AnswerPermission, via: str = "github-comment"
) -> tuple[str, str | None]:
    """Carry out an ``allow``/``deny``/``answer`` command written on the item (or in its Slack
    thread, VIA ``slack``): a summary, and why the answer was refused (stale, nothing pending,
    the other kind of prompt) — the policy tells the author — or None when it was taken."""
    verb = action.command.verb
    try:
        done = answer_command(ctx, action.session_id, action.command, action.actor, via)
    except (BadInput, Conflict, NotFound, Unavailable) as exc:
        return f"refused {verb} ({exc.message})", exc.message
    return f"{verb} {done}", None
