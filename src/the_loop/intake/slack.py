"""Processing a Slack request from the inbox: a thread reply goes through the engine like a
GitHub comment, a button press answers a permission, anything else is dropped with
``slack.dropped`` and a reason.

A message that cannot be a thread reply is dropped here: a bot's (the-loop's own posts
included), an edit or deletion (``message_changed`` / ``message_deleted``) or another subtype,
one not in a thread, in a thread bound to nothing, or empty. A reply in a work item's thread
becomes a neutral ``WorkEvent`` (a comment on the item, ``source`` ``slack``, actor
``slack:<user id>``) and goes to ``work_items.handle_event``: the engine decides authorization
(``slack.authorizedUsers``), keywords, paused sessions and replays exactly once, and the
work-item policy carries the decision out; a delivered reply is mirrored, with
``slack.mirrorToGitHub``, as a marked comment on the item (never delivered back: it carries
the self-marker). A refusal is also recorded as ``slack.dropped``. A reply in a standing
session's thread is authorized by the engine's rule for Slack; an ``allow``, ``deny`` or
``answer`` command in it (read by the engine's rule, ``engine.answer_command``) answers the
session's prompt as in a work item's thread, any other reply is delivered by ``standing.say``;
a stopped standing session is answered in the thread with how to start it.

A press is taken only from an authorized user, for a prompt posted in that same channel, and
answered with ``attention.answer_permission`` (Allow / Deny: the rules of ``the-loop allow``,
still pending, first answer wins) or ``attention.answer_question`` (a question's choice, typed
into its dialog as ``sessions answer`` types it); the message is then updated. A refused press
(stale, unauthorized) changes nothing and is answered with an ephemeral message only the
presser sees.
"""

from __future__ import annotations

import html
import time
from typing import Any

from the_loop import engine
from the_loop import events as ev
from the_loop.agent.attention import service as attention
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict, NotFound, NotRunning, Unavailable
from the_loop.faults import crash_point
from the_loop.outbox import drain as outbox
from the_loop.outbox import github as writebacks
from the_loop.outbox import slack as outbound
from the_loop.outbox import slack_notices as notices
from the_loop.prompts import sanitize
from the_loop.refs import WorkItemRef
from the_loop.slack.intake import (
    ALLOW_ACTION,
    ANSWER_ACTION,
    DENY_ACTION,
    EVENT,
    SOURCE,
    SlackMessage,
    SlackPress,
    stored_work,
)
from the_loop.standing import service as standing
from the_loop.store import attention as attention_store
from the_loop.store import slack as store
from the_loop.store.events import NewEvent
from the_loop.store.inbox import Handled
from the_loop.text_safety import github_quote, slack_text
from the_loop.work import WorkEvent, WorkKind
from the_loop.work_items import service as sessions

MIRROR_LIMIT = 4000


def process(
    ctx: Ctx, work: str, delivery_id: str, prior: engine.PriorDelivery = engine.PriorDelivery.NONE
) -> Handled:
    """Act on one stored Slack request (PRIOR: what became of earlier processing of it)."""
    crash_point("slack-before-process")
    found = stored_work(work)
    if isinstance(found, SlackPress):
        return _press(ctx, found, delivery_id)
    return _message(ctx, found, delivery_id, prior)


_CHATTER = ("bot-message", "not-in-a-thread", "subtype-", "event-type-")
"""Drops that every busy channel produces all day: recorded at debug level."""


def _dropped(delivery_id: str, reason: str, **detail: Any) -> NewEvent:
    """The ``slack.dropped`` event of a request nothing is done with, for REASON: committed
    with the delivery's outcome, as the engine's decision-only events are."""
    level = ev.Level.debug if reason.startswith(_CHATTER) else None
    return ev.build(
        "slack.dropped",
        source=SOURCE,
        level=level,
        delivery_id=delivery_id,
        reason=reason,
        **detail,
    )


def _drop(delivery_id: str, reason: str, **detail: Any) -> Handled:
    """A request dropped for REASON: its summary and its ``slack.dropped`` event."""
    return Handled(f"dropped ({reason})", (), (_dropped(delivery_id, reason, **detail),))


def _why_dropped(m: SlackMessage) -> str | None:
    """Why M cannot be a thread reply at all (before its thread is looked up)."""
    if m.event_type != "message":
        return f"event-type-{m.event_type}"
    if m.bot:
        return "bot-message"
    if m.subtype == "message_changed":
        return "edited"
    if m.subtype == "message_deleted":
        return "deleted"
    if m.subtype:
        return f"subtype-{m.subtype}"
    if not m.user:
        return "unauthorized"
    if not m.thread_ts or m.thread_ts == m.ts:
        return "not-in-a-thread"
    return None


def _message(ctx: Ctx, m: SlackMessage, delivery_id: str, prior: engine.PriorDelivery) -> Handled:
    reason = _why_dropped(m)
    if reason is not None:
        return _drop(delivery_id, reason, user=m.user, channel=m.channel)
    assert m.user is not None and m.thread_ts is not None
    key = store.key_of(ctx.db.connect(), m.channel, m.thread_ts)
    if key is None:
        return _drop(delivery_id, "unbound-thread", user=m.user, channel=m.channel)
    text = sanitize(html.unescape(m.text)).strip()
    if not text:
        return _drop(delivery_id, "empty", user=m.user, channel=m.channel)
    if key.startswith(outbound.STANDING_PREFIX):
        return _standing(ctx, m, key, text, delivery_id)
    ref = WorkItemRef.parse(key)
    outcome = sessions.handle_event(ctx, work_event(m, ref, text, delivery_id), prior)
    if any(isinstance(a, engine.Deliver) for a in outcome.actions):
        _mirror(ctx, ref, m.user, text, delivery_id)
        _tell_waiting(ctx, key, m, outcome, delivery_id)
    else:
        outcome.records += _refusals(outcome.actions, delivery_id, m.user, key)
    return Handled(outcome.summary, tuple(outcome.reasons), tuple(outcome.records))


def _tell_waiting(
    ctx: Ctx, key: str, m: SlackMessage, outcome: sessions.Outcome, delivery_id: str
) -> None:
    """A reply that did not reach the agent at once (held behind a dialog or a person's
    draft, over budget, its session queued) is answered in its thread with why, as the CLI
    and the API answer theirs: whoever wrote it hears back where they wrote it."""
    conn = ctx.db.connect()
    for action, done in zip(outcome.actions, outcome.done, strict=True):
        if isinstance(action, engine.Deliver) and sessions.waiting(conn, action.session_id,
                                                                   delivery_id):  # fmt: skip
            _reply(ctx, key, m.channel, f"<@{m.user}> {slack_text(done)}", delivery_id)


def work_event(m: SlackMessage, ref: WorkItemRef, text: str, delivery_id: str) -> WorkEvent:
    """M, a reply in REF's bound thread, as the neutral work event: a comment on REF by
    ``slack:<user>``, naming its message so that a replay of it is recognised."""
    return WorkEvent(
        kind=WorkKind.COMMENT,
        event_name=EVENT,
        action=None,
        delivery_id=delivery_id,
        actor=f"slack:{m.user}",
        actor_is_bot=False,
        host=ref.host,
        repository=ref.full_name,
        items=(ref,),
        own=ref,
        body=text,
        source_id=f"slack-{m.channel}-{m.ts}",
        source=SOURCE,
    )


def _refusals(
    actions: tuple[engine.Action, ...], delivery_id: str, user: str, key: str
) -> list[NewEvent]:
    """``slack.dropped`` for a reply the engine refused (unauthorized, paused, …), so that
    Slack's own record shows it beside the engine's ``route.*`` event."""
    out = []
    for action in actions:
        if isinstance(action, engine.Unauthorized):
            out.append(_dropped(delivery_id, "unauthorized", user=user, workItem=key))
        elif isinstance(action, engine.Ignore):
            out.append(_dropped(delivery_id, action.reason.value, user=user, workItem=key))
    return out


def _standing(ctx: Ctx, m: SlackMessage, key: str, text: str, delivery_id: str) -> Handled:
    """A reply in a standing session's thread: authorized by the engine's rule for Slack,
    delivered by the standing policy."""
    assert m.user is not None
    actor = f"slack:{m.user}"
    if not engine.is_authorized(actor, ctx.config, SOURCE):
        return _drop(delivery_id, "unauthorized", user=m.user, channel=m.channel)
    name = key.removeprefix(outbound.STANDING_PREFIX)
    command = engine.answer_command(text, ctx.config)
    if command is not None:
        try:
            done = attention.answer_command(ctx, key, command, actor, SOURCE)
        except (BadInput, Conflict, NotFound, Unavailable) as exc:
            _reply(ctx, key, m.channel, f"<@{m.user}> {slack_text(exc.message)}", delivery_id)
            return _drop(delivery_id, "stale-answer", user=m.user, standing=name)
        return Handled(f"{command.verb} {done}")
    try:
        said = standing.say(ctx, name, text, actor=actor)
    except NotRunning:
        _reply(
            ctx,
            key,
            m.channel,
            f"<@{m.user}> standing session *{slack_text(name)}* is not running; start it "
            f"with `the-loop standing start {slack_text(name)}`",
            delivery_id,
        )
        return _drop(delivery_id, "standing-stopped", user=m.user, standing=name)
    except Conflict as exc:  # over budget (or a foreign pane): the reply says why
        _reply(ctx, key, m.channel, f"<@{m.user}> {slack_text(exc.message)}", delivery_id)
        return _drop(delivery_id, "standing-refused", user=m.user, standing=name)
    if said.held is not None:
        _reply(ctx, key, m.channel, f"<@{m.user}> {slack_text(said.detail)}", delivery_id)
        return Handled(said.detail)
    return Handled(f"said to standing session {name}")


def _reply(ctx: Ctx, key: str, channel: str, text: str, delivery_id: str) -> None:
    with ctx.db.transaction() as tx:
        outbound.queue_thread_reply(tx, key, channel, text, f"reply:{delivery_id}")
    outbound.wake(ctx)


def _mirror(ctx: Ctx, ref: WorkItemRef, user: str, text: str, delivery_id: str) -> None:
    """The reply as a marked comment on REF (``slack.mirrorToGitHub``)."""
    if not ctx.config.slack.mirror_to_github:
        return
    clipped = text if len(text) <= MIRROR_LIMIT else text[:MIRROR_LIMIT] + " …"
    quoted = "\n".join(f"> {github_quote(line)}" for line in clipped.splitlines())
    body = f"From Slack, `slack:{user}` to the agent:\n\n{quoted}"
    with ctx.db.transaction() as tx:
        ids = writebacks.queue_reply(tx, ctx.config, ref, body, delivery_id=delivery_id)
    if ids:
        outbox.wake(ctx)


def _ephemeral(ctx: Ctx, p: SlackPress, text: str, delivery_id: str) -> None:
    with ctx.db.transaction() as tx:
        outbound.queue_ephemeral(
            tx,
            key=f"ephemeral:{delivery_id}",
            channel=p.channel,
            user=p.user,
            text=text,
            thread_ts=None,
        )
    outbound.wake(ctx)


def _press(ctx: Ctx, p: SlackPress, delivery_id: str) -> Handled:
    if p.action not in (ALLOW_ACTION, DENY_ACTION, ANSWER_ACTION):
        return _drop(delivery_id, f"action-{p.action}", user=p.user)
    if not engine.is_authorized(f"slack:{p.user}", ctx.config, SOURCE):
        _ephemeral(
            ctx,
            p,
            "You are not allowed to answer the-loop's prompts; nothing changed.",
            delivery_id,
        )
        return _drop(delivery_id, "unauthorized", user=p.user, channel=p.channel)
    conn = ctx.db.connect()
    posted = store.posted_prompt(conn, p.prompt_id)
    prompt = attention_store.get_prompt(conn, p.prompt_id)
    if posted is None or prompt is None or posted.channel != p.channel:
        _ephemeral(
            ctx,
            p,
            f"There is no prompt {slack_text(repr(p.prompt_id))} here; nothing changed.",
            delivery_id,
        )
        return _drop(delivery_id, "unknown-prompt", user=p.user, channel=p.channel)
    actor = f"slack:{p.user}"
    try:
        if p.action == ANSWER_ACTION:
            answered = attention.answer_question(
                ctx, prompt.agent, actor, SOURCE, choice=p.choice, prompt_id=p.prompt_id
            )
            summary = f"answer {answered.prompt_id} ({answered.answer})"
        else:
            decision: attention.Decision = "allow" if p.action == ALLOW_ACTION else "deny"
            done = attention.answer_permission(
                ctx, prompt.agent, decision, actor, SOURCE, p.prompt_id
            )
            summary = f"{decision} {done.prompt_id} ({done.tool or 'prompt'})"
    except (BadInput, Conflict, NotFound, Unavailable) as exc:
        _ephemeral(ctx, p, f"Not taken: {slack_text(exc.message)}.", delivery_id)
        return _drop(delivery_id, "stale-answer", user=p.user, promptId=p.prompt_id)
    if notices.queue_outcome(ctx, p.prompt_id, time.time()):
        outbound.wake(ctx)
    return Handled(summary)
