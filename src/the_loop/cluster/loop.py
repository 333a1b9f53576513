"""The daemon's ``node`` task: heartbeat, dead peers, queued sessions for free slots, and the
agents left behind by sessions that moved away while this node was gone.

The heartbeat runs on a thread of its own, not the shared worker threads: lanes blocked on an
item lock must never delay it long enough for the peers to declare this node dead; starting
queued sessions (slow: an agent starts) runs beside it, one pass at a time.
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.refs import is_loop_target
from the_loop.store import sessions as session_store
from the_loop.supervise import monitor, wait_or_stop
from the_loop.work_items import service as sessions

SOURCE = "nodes"
log = logging.getLogger(__name__)


def start_queued(ctx: Ctx) -> None:
    """On a shared database: start queued sessions (any node's) while this node has free
    slots and may claim work."""
    if nodes.may_claim(ctx) and session_store.oldest_queued(ctx.db.connect()) is not None:
        sessions.start_queued(ctx)


def end_left_behind(ctx: Ctx) -> list[str]:
    """On a shared database, when this node starts or rejoins: end the agents in its tmux
    whose sessions another node runs now (they moved while this node was dead or paused, and
    would otherwise keep working untracked beside the moved one). Only through the agent
    layer's ownership-checked terminate; the pane stays as a dead record. The sessions whose
    agents were ended."""
    if not ctx.db.shared:
        return []
    me, tmux = nodes.node_name(ctx), ctx.runners.tmux
    ended: list[str] = []
    for target in [t for t in tmux.list_targets() or [] if is_loop_target(t)]:
        owner = tmux.owner_of(target)
        rec = session_store.get(ctx.db.connect(), owner) if owner else None
        if rec is None or rec.node in (me, None) or rec.tmux_target != target:
            continue
        agent = sessions.agent_of(rec)
        if layer.probe(ctx, agent) != "live":
            continue
        report = layer.terminate(ctx, agent)
        ev.emit(
            ctx.db,
            "session.harness_terminated",
            source=SOURCE,
            work_item=rec.work_item,
            session_id=rec.id,
            reason=f"the session runs on node {rec.node} now; this node ({me}) was gone",
            signalled=list(report.signalled),
            error=report.error or report.refused,
        )
        if not (report.error or report.refused):
            ended.append(rec.id)
    return ended


def _sweep(ctx: Ctx) -> None:
    try:
        end_left_behind(ctx)
    except (LoopError, OSError) as exc:  # tmux or the database: the next rejoin tries again
        log.warning("node: the agents left behind were not ended: %s", exc)


async def node_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Beat every ``node.heartbeat_seconds`` until STOP (supervised as ``node``)."""
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
                starting = asyncio.ensure_future(asyncio.to_thread(start_queued, ctx))
            if await wait_or_stop(stop, ctx.config.node.heartbeat_seconds):
                if starting is not None:
                    await asyncio.wait([starting], timeout=30)
                return
