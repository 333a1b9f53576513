"""The Slack drain: posts the outbox's ``slack`` rows through the official ``slack_sdk`` Web
API client (one doorway: ``base_url`` is ``slack.apiUrl``, the bot token comes from the env
var ``slack.botTokenEnv``), and runs the attention pass (``slack.notices``) and the answers
pass (``outbox.slack_turns``) before each batch.

Outcomes of one try (decision 0025):

- answered ``ok`` → ``done`` (the ``ts`` recorded on the thread binding or the posted prompt)
  and ``slack.posted``;
- HTTP 429 (or ``ratelimited``) → due again after ``Retry-After``, not before; Slack refused
  it, so nothing was posted and no check is needed;
- 5xx, timeouts, refused connections → due again after a backoff, marked ``verify``: the next
  try of a ``chat.postMessage`` first looks for the post's metadata token in the thread
  (``conversations.replies``) or the channel (``conversations.history``) and records what it
  finds instead of posting twice;
- any other refusal (``channel_not_found``, ``invalid_auth``, no token) → ``failed`` with
  ``writeback.failed``, never retried (``the-loop outbox replay ID`` tries again);
- a post into a thread whose announcement is not posted yet, an update of a message not
  posted yet, or a part of a split message whose previous part is not finished yet, waits
  for it.

``slack_sdk``'s own retry handlers are off: the outbox is the only retrier.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.error
from typing import Any

from the_loop.context import Ctx
from the_loop.faults import crash_point
from the_loop.outbox import drain as outbox
from the_loop.outbox import slack as outbound
from the_loop.outbox import slack_notices as notices
from the_loop.outbox import slack_turns as turns
from the_loop.pulse import CHANGE_GAP_SECONDS, Pulse, soonest
from the_loop.store import outbox as outbox_store
from the_loop.store import slack as store
from the_loop.store.outbox import OutboxItem, OutboxStatus, SlackPayload
from the_loop.supervise import TRANSIENT, monitor

SOURCE = "slack"
SLACK = outbound.SLACK
WAIT_FOR_THREAD_SECONDS = 0.5
BATCH = 5
LEASE_SECONDS = 120.0
VERIFY_WINDOW_SECONDS = 600.0


class _Wait(Exception):
    """Try again at AT (VERIFY: the last try may have been posted)."""

    def __init__(self, error: str, at: float, verify: bool) -> None:
        super().__init__(error)
        self.error, self.at, self.verify = error, at, verify


class _Refused(Exception):
    pass


class _Found(Exception):
    def __init__(self, ts: str, channel: str) -> None:
        super().__init__(ts)
        self.ts, self.channel = ts, channel


def client_for(ctx: Ctx, token: str) -> Any:
    """A ``slack_sdk`` WebClient for TOKEN at ``slack.apiUrl``, without its own retries."""
    from slack_sdk import WebClient  # lazy: start-up (slack_sdk is only needed to post)

    cfg = ctx.config.slack
    return WebClient(
        token=token,
        base_url=cfg.api_url.rstrip("/") + "/",
        timeout=int(max(1, cfg.timeout_seconds)),
        retry_handlers=[],
    )


def _resolve(ctx: Ctx, payload: SlackPayload) -> dict[str, Any]:
    """The call's arguments with the thread's and the updated message's ``ts`` filled in."""
    args = dict(payload.args)
    conn = ctx.db.connect()
    if payload.after is not None:
        previous = outbox_store.get(ctx.db, payload.after)
        if previous is not None and previous.status not in (OutboxStatus.done, OutboxStatus.failed):
            raise _Wait("the previous part is not posted yet", _soon(), False)
    if payload.thread is not None:
        thread = store.thread_of(conn, payload.thread)
        if thread is None:
            raise _Refused(f"no Slack thread is bound to {payload.thread}")
        if thread.thread_ts is None:
            raise _Wait("the thread's announcement is not posted yet", _soon(), False)
        args["channel"], args["thread_ts"] = thread.channel, thread.thread_ts
    if payload.updates is not None:
        posted = store.posted_prompt(conn, payload.updates)
        if posted is None:
            raise _Refused(f"prompt {payload.updates} was never posted to Slack")
        if posted.ts is None:
            raise _Wait("the message to update is not posted yet", _soon(), False)
        args["channel"], args["ts"] = posted.channel, posted.ts
    return args


def _soon() -> float:
    return time.time() + WAIT_FOR_THREAD_SECONDS


def _classify(exc: Exception, attempts: int) -> Exception:
    from slack_sdk.errors import SlackApiError  # lazy: start-up (slack_sdk)

    if isinstance(exc, SlackApiError):
        response = exc.response
        status = int(response.status_code)
        error = str(response.get("error", "") if isinstance(response.data, dict) else "")
        if status == 429 or error == "ratelimited":
            headers = {k.lower(): v for k, v in (response.headers or {}).items()}
            raw = headers.get("retry-after", "1")
            value = raw[0] if isinstance(raw, list) else raw
            seconds = float(value) if str(value).replace(".", "", 1).isdigit() else 1.0
            return _Wait(f"rate limited (Retry-After {seconds:g} s)", time.time() + seconds, False)
        if status >= 500:
            return _Wait(f"Slack answered {status}", outbox.RETRY.next_at(attempts), True)
        return _Refused(f"Slack refused it: {error or status}")
    if isinstance(exc, urllib.error.URLError | OSError | TimeoutError):
        return _Wait(f"Slack unreachable: {exc}", outbox.RETRY.next_at(attempts), True)
    return exc


def _find(client: Any, item: OutboxItem, args: dict[str, Any], token: str) -> None:
    """Raise ``_Found`` when a post carrying TOKEN is already in the thread or channel."""
    channel = str(args["channel"])
    if "thread_ts" in args:
        answer = client.conversations_replies(
            channel=channel, ts=args["thread_ts"], include_all_metadata=True, limit=200
        )
    else:
        oldest = item.created_at.timestamp() - VERIFY_WINDOW_SECONDS
        answer = client.conversations_history(
            channel=channel, oldest=f"{oldest:.6f}", include_all_metadata=True, limit=200
        )
    for message in answer.get("messages") or []:
        meta = message.get("metadata") or {}
        if (meta.get("event_payload") or {}).get("token") == token:
            raise _Found(str(message.get("ts")), channel)


def _call(ctx: Ctx, client: Any, item: OutboxItem) -> tuple[str, str]:
    """Make ITEM's call; its answer's (ts, channel)."""
    payload = item.payload
    assert isinstance(payload, SlackPayload)
    args = _resolve(ctx, payload)
    try:
        if item.verify and payload.method == "chat.postMessage" and payload.token:
            _find(client, item, args, payload.token)
        answer = client.api_call(payload.method, json=args)
        crash_point("slack-after-post")
    except _Found as found:
        return found.ts, found.channel
    except Exception as exc:  # classified: waits, refusals, or the bug itself
        raise _classify(exc, item.attempts) from exc
    ts = answer.get("ts") or answer.get("message_ts") or ""
    return str(ts), str(answer.get("channel") or args.get("channel", ""))


def _record(ctx: Ctx, payload: SlackPayload, ts: str, channel: str) -> None:
    if payload.bind is not None and ts:
        store.set_thread(ctx.db, payload.bind, channel, ts, time.time())
    if payload.prompt is not None and ts:
        store.set_prompt_ts(ctx.db, payload.prompt, ts)


def send_item(ctx: Ctx, client: Any, item: OutboxItem, owner: str) -> str:
    """Try ITEM once and record the outcome: ``posted``, ``waiting`` or ``failed``. Blocking
    (run it in a thread)."""
    payload = item.payload
    try:
        if not isinstance(payload, SlackPayload):
            raise _Refused(f"outbox row {item.id} is not a Slack call")
        if client is None:
            raise _Refused(f"no Slack bot token (${ctx.config.slack.bot_token_env} is unset)")
        ts, channel = _call(ctx, client, item)
    except _Wait as wait:
        outbox_store.mark_retry(ctx.db, item.id, owner, wait.error, wait.at, wait.verify)
        return "waiting"
    except _Refused as refused:
        if outbox_store.mark_failed(ctx.db, item.id, owner, str(refused)):
            _emit(ctx, "writeback.failed", item, error=str(refused))
        return "failed"
    except Exception as exc:  # a bug must not wedge the outbox: keep the row, check, retry
        at = outbox.RETRY.next_at(item.attempts)
        outbox_store.mark_retry(ctx.db, item.id, owner, repr(exc), at, True)
        return "waiting"
    _record(ctx, payload, ts, channel)
    method = payload.method
    outbox_store.mark_done(ctx.db, item.id, f"{method} ts {ts}" if ts else method)
    _emit(ctx, "slack.posted", item, method=method, channel=channel, ts=ts)
    return "posted"


def _emit(ctx: Ctx, type_: str, item: OutboxItem, **extra: Any) -> None:
    outbox.item_event(ctx, type_, item, source=SOURCE, **extra)


class _Sender:
    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.client: Any = None
        self.key: tuple[str, str, float] | None = None

    def client_now(self) -> Any:
        cfg = self.ctx.config.slack
        token = os.environ.get(cfg.bot_token_env, "")
        key = (cfg.api_url, token, cfg.timeout_seconds)
        if key != self.key:
            self.client = client_for(self.ctx, token) if token else None
            self.key = key
        return self.client

    def step(self) -> float:
        """Run the attention and answers passes, then send one batch; when (``time.time``)
        to step again with nothing happening. Blocking."""
        ctx = self.ctx
        turns.pass_once(ctx)  # with Slack off, forgets the turns
        if not ctx.config.slack.enabled:
            return float("inf")
        notices.pass_once(ctx)
        owner = outbox.owner_id()
        items = outbox_store.claim_due(ctx.db, owner, LEASE_SECONDS, None, BATCH, SLACK)
        client = self.client_now() if items else None
        for item in items:
            send_item(ctx, client, item, owner)
        if items:
            return time.time()
        return soonest(outbox_store.next_due(ctx.db, SLACK), notices.next_due(ctx))


async def slack_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's Slack task: the attention pass and the drain of Slack rows until STOP,
    waiting on a ``Pulse`` (``the_loop.pulse``) in between: a queued post wakes it at once, a
    commit (a prompt opened, a turn finished) or another process's write (a prompt answered
    from the CLI) within the gap, and the next post or notice when it falls due. Database
    faults are retried with backoff while the task reports itself stalled."""
    pulse = Pulse(ctx.db, poll_unseen=True)
    outbound.register_wake(ctx, asyncio.get_running_loop(), pulse.urgent)
    sender = _Sender(ctx)
    watch = monitor(ctx, "slack")
    try:
        await asyncio.to_thread(outbox.recover_at_start, ctx)
        while not stop.is_set():
            began = pulse.begin()
            try:
                due = await asyncio.to_thread(sender.step)
                watch.progressed()
            except TRANSIENT as exc:
                due = time.time() + watch.failed(exc)
            gap = min(CHANGE_GAP_SECONDS, ctx.config.attention.poll_seconds)
            if await pulse.wait(stop, began, due, gap):
                break
    finally:
        outbound.unregister_wake(ctx)
        pulse.close()
