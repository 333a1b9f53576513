"""Work-item sessions on a database several nodes share: what the node task does for them
(registered with ``cluster.loop.on_node`` by ``work_items.kind``).

- after each heartbeat: start queued sessions (any node's) while this node has free slots and
  may claim work;
- when this node starts or rejoins: take back its own orphaned sessions whose agents still
  run here (``take_back``), and say whose agent a target left behind is (``left_behind``:
  ``cluster.loop`` ends those of sessions another node runs now).
"""

from __future__ import annotations

import time

from the_loop import agent as layer
from the_loop.agent import node as nodes
from the_loop.cluster import placement
from the_loop.cluster.loop import LeftBehind
from the_loop.context import Ctx
from the_loop.refs import WorkItemRef
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionStatus
from the_loop.work_items import service as sessions

SOURCE = "nodes"
BACK = "its node came back and its agent still runs: its state is read again"


def start_queued(ctx: Ctx) -> None:
    """On a shared database: start queued sessions (any node's) while this node has free
    slots and may claim work."""
    if nodes.may_claim(ctx) and session_store.oldest_queued(ctx.db.connect()) is not None:
        sessions.start_queued(ctx)


def left_behind(ctx: Ctx, owner: str) -> LeftBehind | None:
    """The agent of work-item session OWNER (a target's ownership mark in this node's tmux)
    when another node runs that session now; None otherwise."""
    rec = session_store.get(ctx.db.connect(), owner)
    if rec is None or rec.node in (nodes.node_name(ctx), None):
        return None
    return LeftBehind(sessions.agent_of(rec), rec.node, work_item=rec.work_item, session_id=rec.id)


def take_back(ctx: Ctx) -> list[str]:
    """On a shared database, when this node starts or rejoins: its own orphaned sessions whose
    agents still run in its tmux (it was paused, or only its daemon died) are active here
    again, under each item's lock, rather than started a second time on another node by
    their next event. Their attention is read again (``working`` until their harness or
    screen says otherwise). The sessions taken back."""
    if not ctx.db.shared:
        return []
    me = nodes.node_name(ctx)
    taken: list[str] = []
    for found in session_store.list_sessions(ctx.db.connect(), SessionStatus.orphaned):
        if found.node != me or found.runner != "tmux":
            continue
        with layer.hold(ctx, [WorkItemRef.parse(found.work_item).slug]):
            rec = session_store.get(ctx.db.connect(), found.id)
            if rec is None or rec.status is not SessionStatus.orphaned or rec.node != me:
                continue
            if layer.probe(ctx, sessions.agent_of(rec)) != "live":
                continue  # gone with its host: the next event starts it where it is handled
            with ctx.db.transaction() as tx:
                attention_store.set_back(tx, rec.id, BACK, now=time.time(), source=SOURCE)
            placement.take_over(ctx, rec, me)
        taken.append(rec.id)
    return taken
