"""The daemon's ``node`` task: heartbeat, dead peers, queued sessions for free slots, and the
agents left behind by sessions that moved away while this node was gone.

The heartbeat runs on a thread of its own, not the shared worker threads: lanes blocked on an
item lock must never delay it long enough for the peers to declare this node dead; starting
queued sessions (slow: an agent starts) runs beside it, one pass at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from the_loop.agent import kinds
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.supervise import monitor, wait_or_stop

SOURCE = "nodes"
log = logging.getLogger(__name__)


Step = Callable[[Ctx], object]
_ON_BEAT: list[Step] = []
_ON_REJOIN: list[Step] = []


def on_node(beat: Step | None = None, rejoin: Step | None = None) -> None:
    """Register what a kind of session does on a shared database after each heartbeat (BEAT:
    start queued sessions for free slots) and when this node starts or rejoins (REJOIN: end
    the agents left behind by sessions that moved away)."""
    if beat is not None:
        _ON_BEAT.append(beat)
    if rejoin is not None:
        _ON_REJOIN.append(rejoin)


def _beat(ctx: Ctx) -> None:
    for step in list(_ON_BEAT):
        step(ctx)


def _sweep(ctx: Ctx) -> None:
    try:
        for step in list(_ON_REJOIN):
            step(ctx)
    except (LoopError, OSError) as exc:  # tmux or the database: the next rejoin tries again
        log.warning("node: the agents left behind were not ended: %s", exc)


async def node_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Beat every ``node.heartbeat_seconds`` until STOP (supervised as ``node``)."""
    kinds.load()
    watch = monitor(ctx, "node")
    loop = asyncio.get_running_loop()
    starting: asyncio.Future[None] | None = None
    sweeping: asyncio.Future[None] | None = None
    swept: int | None = None  # the rejoin count the left-behind agents were last ended at
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="node") as pool:
        while True:
            await loop.run_in_executor(pool, nodes.heartbeat, ctx)
            watch.progressed()
            rejoined = nodes.state_for(ctx.db).rejoined
            if ctx.db.shared and rejoined != swept and (sweeping is None or sweeping.done()):
                swept = rejoined  # at start, and after each rejoin
                sweeping = asyncio.ensure_future(asyncio.to_thread(_sweep, ctx))
            if ctx.db.shared and (starting is None or starting.done()):
                starting = asyncio.ensure_future(asyncio.to_thread(_beat, ctx))
            if await wait_or_stop(stop, ctx.config.node.heartbeat_seconds):
                if starting is not None:
                    await asyncio.wait([starting], timeout=30)
                return
