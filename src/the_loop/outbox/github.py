"""Write-backs to GitHub around a session's life: 👀 on pickup, 🎉/😕 on the first delivery,
the announcement comment, and replies. They are queued in the outbox (``the_loop.outbox.drain``),
never posted here: a failure to post is the outbox's to retry or report, never an error of
the delivery that caused it. Everything posted carries the self-marker.

The ``queue_*`` functions write the rows inside the caller's transaction TX (call
``outbox.wake(ctx)`` after it commits); ``pickup``, ``spawned`` and ``reply`` do the same in a
transaction of their own and wake the drain themselves. Each returns the outbox ids written
(or found, for a repeated enqueue); nothing is queued while ``github.enabled`` is off, and
reactions and the announcement follow ``github.reactions`` and ``github.announce``. A local
work item (``local:NAME``) has no tracker: nothing is ever queued for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.context import Ctx
from the_loop.github.writeback import DELIVERED, FAILED, PICKUP
from the_loop.outbox import drain as outbox
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent

if TYPE_CHECKING:
    from the_loop.config import Config
    from the_loop.store.conn import Connection


def _comment_id(event: WorkEvent | None) -> int | None:
    if event is None:
        return None
    value = event.excerpt.get("comment.id")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def queue_pickup(
    tx: Connection, config: Config, ref: WorkItemRef, event: WorkEvent | None
) -> list[int]:
    """Queue 👀 on the request (its comment, else the item) that started work on REF."""
    if not config.github.enabled or not config.github.reactions or event is None or ref.is_local:
        return []
    row = outbox.enqueue_reaction(tx, ref, PICKUP, what="pickup", comment_id=_comment_id(event))
    return [row.id]


def queue_spawned(
    tx: Connection,
    config: Config,
    ref: WorkItemRef,
    event: WorkEvent | None,
    ok: bool,
    announcement: str,
) -> list[int]:
    """Queue 🎉 (or 😕 when the start failed) and, on success, the ANNOUNCEMENT comment (one
    per work item and delivery)."""
    gh = config.github
    if not gh.enabled or event is None or ref.is_local:
        return []
    ids: list[int] = []
    if gh.reactions:
        content = DELIVERED if ok else FAILED
        ids.append(
            outbox.enqueue_reaction(
                tx, ref, content, what="spawn", comment_id=_comment_id(event)
            ).id
        )
    if ok and gh.announce:
        key = outbox.text_key("github", str(ref), "announce", event.delivery_id)
        ids.append(outbox.enqueue_comment(tx, ref, announcement, what="announce", key=key).id)
    return ids


def queue_reply(
    tx: Connection,
    config: Config,
    ref: WorkItemRef,
    text: str,
    *,
    delivery_id: str | None = None,
) -> list[int]:
    """Queue TEXT as a (marked) comment on REF. With DELIVERY_ID (the delivery answered), the
    same reply to the same delivery is stored once; without, every call posts."""
    if not config.github.enabled or ref.is_local:
        return []
    key = (
        outbox.text_key("github", str(ref), "reply", delivery_id, text)
        if delivery_id is not None
        else None
    )
    return [outbox.enqueue_comment(tx, ref, text, what="reply", key=key).id]


def pickup(ctx: Ctx, ref: WorkItemRef, event: WorkEvent | None) -> list[int]:
    """``queue_pickup`` in a transaction of its own, then wake the drain."""
    with ctx.db.transaction() as tx:
        ids = queue_pickup(tx, ctx.config, ref, event)
    return _woken(ctx, ids)


def spawned(
    ctx: Ctx, ref: WorkItemRef, event: WorkEvent | None, ok: bool, announcement: str
) -> list[int]:
    """``queue_spawned`` in a transaction of its own, then wake the drain."""
    with ctx.db.transaction() as tx:
        ids = queue_spawned(tx, ctx.config, ref, event, ok, announcement)
    return _woken(ctx, ids)


def reply(ctx: Ctx, ref: WorkItemRef, text: str) -> list[int]:
    """``queue_reply`` (without a delivery id) in a transaction of its own, then wake."""
    with ctx.db.transaction() as tx:
        ids = queue_reply(tx, ctx.config, ref, text)
    return _woken(ctx, ids)


def _woken(ctx: Ctx, ids: list[int]) -> list[int]:
    if ids:
        outbox.wake(ctx)
    return ids


def announcement(ctx: Ctx, ref: WorkItemRef, session_id: str) -> str:
    """The comment announcing a new session: how to attach, and the dashboard link."""
    lines = [
        f"the-loop started an agent for this {('item')} (session `{session_id}`).",
        "",
        f"Watch or steer it: `the-loop sessions attach {ref}`",
    ]
    public = ctx.config.server.public_url.rstrip("/")
    if public:
        lines.append(f"Dashboard: {public}/sessions/{session_id}")
    lines.append("Comment here to talk to it; close the item to end it.")
    return "\n".join(lines)
