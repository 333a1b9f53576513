"""Slack write-backs, queued in the outbox with the decision that caused them (SPEC §12).

Every post, update and ephemeral reply is an outbox row with target ``slack`` and a unique
key, written inside the caller's transaction; ``slack.sender`` drains them through
``slack_sdk``. Announcements reserve the thread binding in the same transaction
(``store.slack.reserve``), so a standing session or a work item is announced once, and a
restart finds its thread again. Call ``wake(ctx)`` after the commit (any thread).

Links in announcements use ``server.publicUrl`` when set, else the URL the daemon serves on
(decision 0025); the dashboard's session page is ``<base>/sessions/<id>``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
import weakref
from typing import TYPE_CHECKING, Any

from the_loop.context import Ctx
from the_loop.instance import read_info
from the_loop.refs import WorkItemRef
from the_loop.store import Database
from the_loop.store import outbox as outbox_store
from the_loop.store import slack as store
from the_loop.store.outbox import NewWrite, SlackPayload
from the_loop.text_safety import slack_text

if TYPE_CHECKING:
    from the_loop.config import Config
    from the_loop.store.conn import Connection

SLACK = "slack"
STANDING_PREFIX = "standing:"
_WAKES: weakref.WeakKeyDictionary[Database, tuple[asyncio.AbstractEventLoop, asyncio.Event]] = (
    weakref.WeakKeyDictionary()
)


def register_wake(ctx: Ctx, loop: asyncio.AbstractEventLoop, event: asyncio.Event) -> None:
    """The sender task of CTX waits on EVENT in LOOP (``wake`` sets it)."""
    _WAKES[ctx.db] = (loop, event)


def unregister_wake(ctx: Ctx) -> None:
    _WAKES.pop(ctx.db, None)


def wake(ctx: Ctx) -> None:
    """Tell this process's Slack sender (if it runs) that rows were committed; any thread."""
    found = _WAKES.get(ctx.db)
    if found is None:
        return
    loop, event = found
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
        loop.call_soon_threadsafe(event.set)


def _insert(
    tx: Connection, key: str, what: str, work_item: str | None, payload: SlackPayload
) -> int:
    new = NewWrite(key=key, target=SLACK, what=what, work_item=work_item, payload=payload)
    return outbox_store.insert(tx, new).id


def queue_post(
    tx: Connection,
    *,
    key: str,
    what: str,
    channel: str,
    text: str,
    thread: str | None = None,
    blocks: list[dict[str, Any]] | None = None,
    bind: str | None = None,
    prompt: str | None = None,
    work_item: str | None = None,
    after: int | None = None,
) -> int:
    """Queue ``chat.postMessage`` of TEXT in CHANNEL (in THREAD's bound thread when given;
    once the outbox row AFTER is finished, when given)."""
    token = uuid.uuid4().hex[:16]
    args: dict[str, Any] = {
        "channel": channel,
        "text": text,
        "metadata": {"event_type": "the_loop_post", "event_payload": {"token": token}},
    }
    if blocks:
        args["blocks"] = blocks
    payload = SlackPayload(
        method="chat.postMessage",
        args=args,
        thread=thread,
        bind=bind,
        prompt=prompt,
        token=token,
        after=after,
    )
    return _insert(tx, f"slack:{key}", what, work_item, payload)


def queue_update(tx: Connection, *, key: str, prompt_id: str, channel: str, text: str) -> int:
    """Queue ``chat.update`` of the message posted for PROMPT_ID (its buttons removed)."""
    blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": text}}]
    payload = SlackPayload(
        method="chat.update",
        args={"channel": channel, "text": text, "blocks": blocks},
        updates=prompt_id,
    )
    return _insert(tx, f"slack:{key}", "attention-answered", None, payload)


def queue_ephemeral(
    tx: Connection, *, key: str, channel: str, user: str, text: str, thread_ts: str | None
) -> int:
    """Queue ``chat.postEphemeral``: TEXT shown to USER only."""
    args: dict[str, Any] = {"channel": channel, "user": user, "text": text}
    if thread_ts:
        args["thread_ts"] = thread_ts
    payload = SlackPayload(method="chat.postEphemeral", args=args)
    return _insert(tx, f"slack:{key}", "ephemeral", None, payload)


def link_base(ctx: Ctx) -> str:
    """Where people reach the dashboard: ``server.publicUrl``, else the daemon's own URL."""
    public = ctx.config.server.public_url.rstrip("/")
    if public:
        return public
    info = read_info(ctx.state_dir)
    return info.url.rstrip("/") if info is not None else ""


def item_url(ref: WorkItemRef) -> str:
    return f"https://{ref.host}/{ref.owner}/{ref.repo}/issues/{ref.number}"


def standing_channel(config: Config, name: str) -> str | None:
    """The channel standing session NAME announces in, None when Slack is off for it."""
    if not config.slack.enabled:
        return None
    for entry in config.standing.sessions:
        if entry.name == name and entry.slack.enabled:
            return entry.slack.channel or config.slack.channel
    return None


def announce_standing(ctx: Ctx, name: str) -> bool:
    """On a start of standing session NAME: announce it and bind its thread, the first time
    only (a restart keeps the thread). True when an announcement was queued."""
    channel = standing_channel(ctx.config, name)
    if channel is None:
        return False
    key = f"{STANDING_PREFIX}{name}"
    shown = slack_text(name)
    text = (
        f"Standing session *{shown}* is running. Reply in this thread to talk to it "
        f"(authorized users only). Attach: `the-loop standing attach {shown}`"
    )
    base = link_base(ctx)
    if base:
        text += f"\nDashboard: {base}/standing/{name}"
    with ctx.db.transaction() as tx:
        if not store.reserve(tx, key, channel, time.time()):
            return False
        queue_post(tx, key=f"announce:{key}", what="announce", channel=channel, text=text, bind=key)
    wake(ctx)
    return True


def queue_work_item(tx: Connection, ctx: Ctx, ref: WorkItemRef, session_id: str) -> bool:
    """In the spawn's transaction TX: with ``slack.workItems``, announce REF's new session in
    ``slack.channel`` and bind the thread (once per work item). True when queued."""
    slack = ctx.config.slack
    if not (slack.enabled and slack.work_items and slack.channel):
        return False
    key = str(ref)
    if not store.reserve(tx, key, slack.channel, time.time()):
        return False
    lines = [
        f"the-loop started an agent for <{item_url(ref)}|{ref}> (session `{session_id}`).",
        f"Watch or steer it: `the-loop sessions attach {ref}`",
    ]
    base = link_base(ctx)
    if base:
        lines.append(f"Dashboard: {base}/sessions/{session_id}")
    lines.append("Reply in this thread to talk to it (authorized users only).")
    queue_post(
        tx,
        key=f"announce:{key}",
        what="announce",
        channel=slack.channel,
        text="\n".join(lines),
        bind=key,
        work_item=key,
    )
    return True


def queue_thread_reply(tx: Connection, thread_key: str, channel: str, text: str, key: str) -> int:
    """Queue TEXT as a reply in THREAD_KEY's bound thread (KEY makes it unique)."""
    return queue_post(tx, key=key, what="reply", channel=channel, text=text, thread=thread_key)


def queue_budget_notice(ctx: Ctx, work_item: str, reason: str, key: str) -> bool:
    """Say in WORK_ITEM's bound thread (if it has one) that its agent stopped over budget;
    KEY makes it unique (one per stop). True when queued."""
    if not ctx.config.slack.enabled:
        return False
    thread_key = str(WorkItemRef.parse(work_item))
    thread = store.thread_of(ctx.db.connect(), thread_key)
    if thread is None:
        return False
    text = (
        f"The agent stopped at the end of its turn: {slack_text(reason)}. Messages are kept and "
        "delivered "
        f"once its budget is raised: `the-loop sessions extend {thread_key} --usd N` (or "
        "`--turns N`)."
    )
    with ctx.db.transaction() as tx:
        queued = queue_thread_reply(tx, thread_key, thread.channel, text, key)
    wake(ctx)
    return bool(queued)


def queue_standing_budget_notice(ctx: Ctx, name: str, reason: str, hint: str, key: str) -> bool:
    """Say in standing session NAME's bound thread (when Slack is on for it) that it stopped
    over budget and how to lift it (HINT); KEY makes it unique (one per stop)."""
    if standing_channel(ctx.config, name) is None:
        return False
    thread_key = f"{STANDING_PREFIX}{name}"
    thread = store.thread_of(ctx.db.connect(), thread_key)
    if thread is None:
        return False
    text = (
        f"Standing session *{slack_text(name)}* stopped at the end of its turn: "
        f"{slack_text(reason)}. Messages are "
        f"refused until its budget is raised: {hint}."
    )
    with ctx.db.transaction() as tx:
        queued = queue_thread_reply(tx, thread_key, thread.channel, text, key)
    wake(ctx)
    return bool(queued)
