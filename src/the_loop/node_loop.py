"""The daemon's ``node`` task: heartbeat, dead peers, and queued sessions for free slots.

The heartbeat runs on a thread of its own, not the shared worker threads: lanes blocked on an
item lock must never delay it long enough for the peers to declare this node dead; starting
queued sessions (slow: an agent starts) runs beside it, one pass at a time.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from the_loop import nodes, sessions
from the_loop.context import Ctx
from the_loop.store import sessions as session_store
from the_loop.supervise import monitor, wait_or_stop


def start_queued(ctx: Ctx) -> None:
    """On a shared database: start queued sessions (any node's) while this node has free
    slots and may claim work."""
    if nodes.may_claim(ctx) and session_store.oldest_queued(ctx.db.connect()) is not None:
        sessions.start_queued(ctx)


async def node_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Beat every ``node.heartbeat_seconds`` until STOP (supervised as ``node``)."""
    watch = monitor(ctx, "node")
    loop = asyncio.get_running_loop()
    starting: asyncio.Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="node") as pool:
        while True:
            await loop.run_in_executor(pool, nodes.heartbeat, ctx)
            watch.progressed()
            if ctx.db.shared and (starting is None or starting.done()):
                starting = asyncio.ensure_future(asyncio.to_thread(start_queued, ctx))
            if await wait_or_stop(stop, ctx.config.node.heartbeat_seconds):
                if starting is not None:
                    await asyncio.wait([starting], timeout=30)
                return
