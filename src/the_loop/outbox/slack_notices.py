"""Attention in the thread: a pending question or permission of an agent whose thread is
bound is posted there once (after ``slack.promptAfterSeconds``: at once by default, since the
person talks to the agent there; decision 0097), with Allow / Deny buttons for a permission
and a button for each choice of a question (other replies are held by the delivery gate until
it is answered, and the message says so); once the prompt is answered or closed (through any
surface), the message is updated to say who answered and how, its buttons gone.
Both are recorded in ``slack_prompts`` in the transaction that queues them, so each happens
once per prompt."""

from __future__ import annotations

import time
from typing import Any

from the_loop.context import Ctx
from the_loop.outbox import slack as outbound
from the_loop.slack.intake import ALLOW_ACTION, ANSWER_ACTION, DENY_ACTION
from the_loop.store import attention as attention_store
from the_loop.store import slack as store
from the_loop.text_safety import slack_text

QUOTE_LIMIT = 600
LABEL_LIMIT = 70
"""A button's text is at most 75 characters in Slack."""


def _quote(text: str) -> str:
    clipped = text if len(text) <= QUOTE_LIMIT else text[:QUOTE_LIMIT] + " …"
    return "\n".join(f"> {slack_text(line)}" for line in clipped.splitlines() or [""])


def who(actor: str | None) -> str:
    """ACTOR as Slack shows it: a Slack user id as a mention, anyone else by name (escaped)."""
    if actor and actor.startswith("slack:") and actor[6:].isalnum():
        return f"<@{actor.removeprefix('slack:')}>"
    return slack_text(actor or "someone")


def prompt_text(kind: str, tool: str, detail: str, prompt_id: str) -> str:
    """What a prompt asks, as its message shows it; the agent's words (TOOL, DETAIL) escaped:
    the message pings, links and hides nothing it shows."""
    tool, prompt_id = slack_text(tool), slack_text(prompt_id)
    if kind == "permission":
        return (
            f"The agent is waiting for permission to run *{tool or 'a tool'}* "
            f"(prompt `{prompt_id}`):\n{_quote(detail)}"
        )
    return f"The agent is waiting for your answer (prompt `{prompt_id}`):\n{_quote(detail)}"


def how_to_answer(ctx: Ctx, prompt: attention_store.Prompt) -> str:
    """The line under a pending question: how it is answered from its thread (a work item's
    or a standing session's: the same command in both)."""
    picks = "Pick a choice below. " if prompt.choices else ""
    keyword = slack_text(ctx.config.routing.keywords.answer)
    return (
        f"{picks}To type an answer, reply `{keyword} {slack_text(prompt.id)} <your answer>`. "
        "Other replies wait until it is answered."
    )


def prompt_blocks(prompt: attention_store.Prompt, text: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    buttons: list[dict[str, Any]] = []
    if prompt.kind == "permission":
        buttons = [
            _button("Allow", ALLOW_ACTION, prompt.id, "primary"),
            _button("Deny", DENY_ACTION, prompt.id, "danger"),
        ]
    elif prompt.kind == "question":
        buttons = [
            _button(f"{n}. {label}", ANSWER_ACTION, f"{prompt.id}.{n}")
            for n, label in enumerate(prompt.choices or [], 1)
        ][:25]  # Slack takes up to 25 elements in one actions block
    if buttons:
        block_id = f"the_loop_prompt_{prompt.id}"
        blocks.append({"type": "actions", "block_id": block_id, "elements": buttons})
    return blocks


def _button(label: str, action: str, value: str, style: str | None = None) -> dict[str, Any]:
    clipped = label if len(label) <= LABEL_LIMIT else label[: LABEL_LIMIT - 1] + "…"
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": clipped},
        "value": value,
    }
    if style is not None:
        button["style"] = style
    return button


def outcome_text(prompt: attention_store.Prompt) -> str:
    """The updated message of a prompt no longer pending."""
    head = prompt_text(prompt.kind, prompt.tool, prompt.detail, prompt.id)
    if prompt.decision is not None:
        done = "Allowed" if prompt.decision == "allow" else "Denied"
        said = f"{head}\n*{done}* {attention_store.answered_by(prompt, who(prompt.actor))}"
        if prompt.untaken:
            return f"{said}, {attention_store.not_taken(prompt)}."
        return f"{said}."
    if prompt.actor is not None:  # a question answered through the-loop
        given = prompt.outcome or ""
        what = given.removeprefix("answered: ") if given.startswith("answered: ") else ""
        answer = f" `{slack_text(what)}`" if what else ""  # its keys typed, not yet recorded
        by = attention_store.answered_by(prompt, who(prompt.actor))
        return f"{head}\n*Answered*{answer} {by}."
    outcome = {
        "timed-out": "Timed out without an answer through the-loop.",
        "moved-on": "No longer pending: the agent moved on.",
        "superseded": "No longer pending: the agent asked something else.",
        attention_store.GONE: "No longer pending: the agent stopped before it was answered.",
        "answered": "Answered.",
    }.get(prompt.outcome or "", "No longer pending.")
    return f"{head}\n{outcome}"


ANSWERING_SECONDS = 15.0
"""How long the update of a question closed while its answer was being typed waits for that
answer to be recorded (its keys took; the answer names itself a moment later)."""


def queue_outcome(ctx: Ctx, prompt_id: str, now: float) -> bool:
    """Queue the update of PROMPT_ID's message (once); True when queued now."""
    conn = ctx.db.connect()
    prompt = attention_store.get_prompt(conn, prompt_id)
    posted = store.posted_prompt(conn, prompt_id)
    if prompt is None or posted is None or prompt.closed_at is None:
        return False  # told once closed: an answer recorded may not be taken
    typing = prompt.actor is not None and prompt.decision is None
    recorded = (prompt.outcome or "").startswith("answered: ")
    if typing and not recorded and now - prompt.closed_at < ANSWERING_SECONDS:
        return False  # told once the answer is recorded (or at a pass after the wait)
    with ctx.db.transaction() as tx:
        if not store.mark_update(tx, prompt_id, now):
            return False
        outbound.queue_update(
            tx,
            key=f"prompt-update:{prompt_id}",
            prompt_id=prompt_id,
            channel=posted.channel,
            text=outcome_text(prompt),
        )
    return True


def pass_once(ctx: Ctx, now: float | None = None) -> int:
    """Queue the prompt posts and updates that are due; how many were queued."""
    if not ctx.config.slack.enabled:
        return 0
    now = time.time() if now is None else now
    conn = ctx.db.connect()
    queued = 0
    for due in store.due_prompts(conn, now - ctx.config.slack.prompt_after_seconds):
        thread = store.thread_of(conn, due.thread_key)
        if thread is None:
            continue
        prompt = attention_store.get_prompt(conn, due.prompt_id)
        if prompt is None:
            continue
        text = prompt_text(prompt.kind, prompt.tool, prompt.detail, prompt.id)
        if prompt.kind == "question":
            text += "\n" + how_to_answer(ctx, prompt)
        with ctx.db.transaction() as tx:
            if store.add_prompt(tx, due.prompt_id, due.thread_key, thread.channel, now):
                outbound.queue_post(
                    tx,
                    key=f"prompt:{due.prompt_id}",
                    what="attention",
                    channel=thread.channel,
                    text=text,
                    thread=due.thread_key,
                    blocks=prompt_blocks(prompt, text),
                    prompt=due.prompt_id,
                )
                queued += 1
    for prompt_id in store.due_updates(conn):
        queued += queue_outcome(ctx, prompt_id, now)
    return queued


def next_due(ctx: Ctx) -> float | None:
    """When (``time.time``) ``pass_once`` has a prompt to post next (None: none waits)."""
    if not ctx.config.slack.enabled:
        return None
    opened = store.first_unposted_prompt(ctx.db.connect())
    return None if opened is None else opened + ctx.config.slack.prompt_after_seconds
