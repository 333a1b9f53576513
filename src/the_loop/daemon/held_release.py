"""The delivery gate's release: once an agent's dialog is gone, what waited behind it is
delivered, by the policy of its kind of session (registered with ``agent.on_release``).

The daemon's attention pass runs ``release`` (``the_loop.agent.attention.notice``); each policy here
only checks that its session is live on this node and delivers under its own lock.
"""

from __future__ import annotations

from the_loop import agent as layer
from the_loop.agent import AgentKind
from the_loop.agent.spend import holds
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.refs import WorkItemRef
from the_loop.standing import service as standing
from the_loop.store import sessions as session_store
from the_loop.store import standing as standing_store
from the_loop.store.sessions import SessionStatus
from the_loop.store.standing import StandingStatus
from the_loop.work_items import service as sessions


def _work_item(ctx: Ctx, key: str) -> None:
    """A started, active session of this node, under its item's processing lock."""
    rec = session_store.get(ctx.db.connect(), key)
    if rec is None or rec.status is not SessionStatus.active or rec.started_at is None:
        return
    if nodes.elsewhere(nodes.shared_name(ctx), rec.node):
        return  # its node's own pass delivers it
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        fresh = session_store.get(ctx.db.connect(), key)
        active = fresh is not None and fresh.status is SessionStatus.active
        if fresh is not None and active and holds.gate(ctx, fresh, None) is None:
            sessions.wake(ctx, fresh)


def _standing(ctx: Ctx, key: str) -> None:
    """A running standing session of this node."""
    name = key.removeprefix("standing:")
    rec = standing_store.get(ctx.db.connect(), name)
    if rec is None or rec.status is not StandingStatus.running:
        return
    if nodes.elsewhere(nodes.shared_name(ctx), rec.node):
        return
    standing.flush_held(ctx, name)


layer.on_release(AgentKind.WORK_ITEM, _work_item)
layer.on_release(AgentKind.STANDING, _standing)


def release(ctx: Ctx) -> int:
    """Deliver what waited behind dialogs that are gone now; how many agents' delivery failed
    (the next pass tries again)."""
    return layer.release_held(ctx)
