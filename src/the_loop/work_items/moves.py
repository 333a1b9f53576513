"""Work-item sessions on a database several nodes share: what the node task does for them
(registered with ``cluster.loop.on_node`` by ``work_items.kind``).

- after each heartbeat: start queued sessions (any node's) while this node has free slots and
  may claim work;
- when this node starts or rejoins: end the agents in its tmux whose sessions another node runs
  now (they moved while this node was dead or paused, and would otherwise keep working
  untracked beside the moved one), only through the agent layer's ownership-checked
  terminate; the pane stays as a dead record.
"""

from __future__ import annotations

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.agent import node as nodes
from the_loop.agent import panes
from the_loop.context import Ctx
from the_loop.store import sessions as session_store
from the_loop.work_items import service as sessions

SOURCE = "nodes"


def start_queued(ctx: Ctx) -> None:
    """On a shared database: start queued sessions (any node's) while this node has free
    slots and may claim work."""
    if nodes.may_claim(ctx) and session_store.oldest_queued(ctx.db.connect()) is not None:
        sessions.start_queued(ctx)


def end_left_behind(ctx: Ctx) -> list[str]:
    """On a shared database, when this node starts or rejoins: end the agents in its tmux
    whose sessions another node runs now; the sessions whose agents were ended."""
    if not ctx.db.shared:
        return []
    me = nodes.node_name(ctx)
    ended: list[str] = []
    for target, owner in panes.loop_targets(ctx):
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
