"""Telling the person who wrote an event something, where they wrote it.

A policy hands over a neutral notice (the source it came from, the work item, whom it is for,
plain text); this renders it for that source and queues it: a marked comment on the item with
an ``@login`` mention for GitHub, a reply in the item's bound thread with a ``<@user>`` mention
(Slack's escaping applied) for Slack. A Slack notice for an item with no bound thread, or with
Slack off, is not queued.
"""

from __future__ import annotations

from the_loop.context import Ctx
from the_loop.outbox import drain
from the_loop.outbox import github as writebacks
from the_loop.outbox import slack as slack_out
from the_loop.refs import WorkItemRef
from the_loop.store import slack as slack_store
from the_loop.text_safety import slack_text


def tell(ctx: Ctx, source: str, item: WorkItemRef, to: str, text: str, delivery_id: str) -> bool:
    """Queue TEXT for TO about ITEM where SOURCE's events are written, once for DELIVERY_ID
    (the delivery it answers: a retry of it queues nothing more). True when queued."""
    if source == "slack":
        return _slack(ctx, item, to, text, f"reply:{delivery_id}")
    mention = f"@{to} " if to else ""
    with ctx.db.transaction() as tx:
        ids = writebacks.queue_reply(
            tx, ctx.config, item, f"{mention}{text}", delivery_id=delivery_id
        )
    if ids:
        drain.wake(ctx)
    return bool(ids)


def _slack(ctx: Ctx, item: WorkItemRef, to: str, text: str, key: str) -> bool:
    if not ctx.config.slack.enabled:
        return False
    thread = slack_store.thread_of(ctx.db.connect(), str(item))
    if thread is None:
        return False
    user = to.removeprefix("slack:")
    mention = f"<@{slack_text(user)}> " if to.startswith("slack:") else ""
    with ctx.db.transaction() as tx:
        queued = slack_out.queue_thread_reply(
            tx, str(item), thread.channel, f"{mention}{slack_text(text)}", key
        )
    slack_out.wake(ctx)
    return bool(queued)
