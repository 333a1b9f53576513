"""Write-backs to GitHub around a session's life: 👀 on pickup, 🎉/😕 on the first delivery,
the announcement comment, and replies. Best effort: a failure is an event, never an error of
the delivery that caused it. Everything posted carries the self-marker."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent

SOURCE = "writeback"


def _enabled(ctx: Ctx) -> bool:
    return ctx.config.github.enabled


def _run(ctx: Ctx, what: str, ref: WorkItemRef, call: Callable[[Any], Awaitable[object]]) -> None:
    import asyncio

    from the_loop.github.api import GitHubClient

    async def go() -> None:
        cfg = ctx.config.github
        async with GitHubClient.from_config(cfg, retries=1, timeout=cfg.timeout_seconds) as client:
            await call(client)

    try:
        asyncio.run(go())
    except Exception as exc:
        ev.emit(
            ctx.db,
            "writeback.failed",
            source=SOURCE,
            work_item=str(ref),
            what=what,
            error=str(exc) or repr(exc),
        )


def _comment_id(event: WorkEvent | None) -> int | None:
    if event is None:
        return None
    value = event.excerpt.get("comment.id")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pickup(ctx: Ctx, ref: WorkItemRef, event: WorkEvent | None) -> None:
    """👀 on the request that started work on REF."""
    if not _enabled(ctx) or event is None:
        return
    from the_loop.github import writeback

    cid = _comment_id(event)
    _run(
        ctx,
        "pickup",
        ref,
        lambda c: writeback.react_pickup(c, ctx.config.github, ref, comment_id=cid),
    )


def spawned(
    ctx: Ctx, ref: WorkItemRef, event: WorkEvent | None, ok: bool, announcement: str
) -> None:
    """🎉 (or 😕 when the start failed) and, on success, the announcement comment."""
    if not _enabled(ctx) or event is None:
        return
    from the_loop.github import writeback

    cid = _comment_id(event)
    cfg = ctx.config.github

    async def both(client: Any) -> None:
        await writeback.react_first_delivery(client, cfg, ref, ok, comment_id=cid)
        if ok:
            await writeback.announce(client, cfg, ref, announcement)

    _run(ctx, "spawn", ref, both)


def reply(ctx: Ctx, ref: WorkItemRef, text: str) -> None:
    """Post TEXT on REF (marked)."""
    if not _enabled(ctx):
        return
    from the_loop.github import writeback

    _run(ctx, "reply", ref, lambda c: writeback.post_comment(c, ref, text))


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
