"""The daemon's ``node`` task: heartbeat, dead peers, queued sessions for free slots, and the
agents left behind by sessions that moved away while this node was gone.

When this node starts or rejoins, each kind of session first takes back what is still its own
(``rejoin`` steps); then every agent in this node's tmux whose session another node runs now
is ended (``left_behind``: each kind says whose a target's ownership mark is), through the
agent layer's ownership-checked terminate, the pane kept as a dead record. One session never
keeps two agents.

The heartbeat runs on a thread of its own, not the shared worker threads: lanes blocked on an
item lock must never delay it long enough for the peers to declare this node dead; starting
queued sessions (slow: an agent starts) runs beside it, one pass at a time.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import Agent, kinds, panes
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.supervise import monitor, wait_or_stop

SOURCE = "nodes"
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeftBehind:
    """An agent in this node's tmux whose session NODE runs now; named in events by its
    WORK_ITEM and SESSION_ID, or its STANDING name."""

    agent: Agent
    node: str
    work_item: str | None = None
    session_id: str | None = None
    standing: str | None = None


Step = Callable[[Ctx], object]
Whose = Callable[[Ctx, str], LeftBehind | None]
_ON_BEAT: list[Step] = []
_ON_REJOIN: list[Step] = []
_WHOSE: list[Whose] = []


def on_node(
    beat: Step | None = None, rejoin: Step | None = None, left_behind: Whose | None = None
) -> None:
    """Register what a kind of session does on a shared database after each heartbeat (BEAT:
    start queued sessions for free slots) and when this node starts or rejoins (REJOIN: take
    back its own sessions; LEFT_BEHIND: for an ownership mark found on a target in this
    node's tmux, the agent of that kind's session another node runs now, else None)."""
    if beat is not None:
        _ON_BEAT.append(beat)
    if rejoin is not None:
        _ON_REJOIN.append(rejoin)
    if left_behind is not None:
        _WHOSE.append(left_behind)


def _beat(ctx: Ctx) -> None:
    for step in list(_ON_BEAT):
        step(ctx)


def _sweep(ctx: Ctx) -> None:
    try:
        for step in list(_ON_REJOIN):
            step(ctx)
        end_left_behind(ctx)
    except (LoopError, OSError) as exc:  # tmux or the database: the next rejoin tries again
        log.warning("node: the agents left behind were not ended: %s", exc)


def end_left_behind(ctx: Ctx) -> list[LeftBehind]:
    """End the live agents in this node's tmux whose sessions another node runs now (they
    moved while this node was dead or paused, and would otherwise keep working untracked
    beside the moved one); the ones ended."""
    if not ctx.db.shared:
        return []
    me = nodes.node_name(ctx)
    ended: list[LeftBehind] = []
    for target, owner in panes.loop_targets(ctx):
        found = _whose(ctx, owner) if owner else None
        if found is None or found.agent.tmux_target != target:
            continue
        if layer.probe(ctx, found.agent) != "live":
            continue
        report = layer.terminate(ctx, found.agent)
        ev.emit(
            ctx.db,
            "session.harness_terminated",
            source=SOURCE,
            work_item=found.work_item,
            session_id=found.session_id,
            standing=found.standing,
            reason=f"the session runs on node {found.node} now; this node ({me}) was gone",
            signalled=list(report.signalled),
            error=report.error or report.refused,
        )
        if not (report.error or report.refused):
            ended.append(found)
    return ended


def _whose(ctx: Ctx, owner: str) -> LeftBehind | None:
    for whose in list(_WHOSE):
        found = whose(ctx, owner)
        if found is not None:
            return found
    return None


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
