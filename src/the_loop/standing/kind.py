"""What standing sessions register with the agent layer (``agent.kinds``): how their held
prompts are delivered once a dialog is gone, and their spend policy (``standing.spend``); and
with the cluster wing, whose agent a target left behind on a returning node is."""

from __future__ import annotations

from the_loop import agent as layer
from the_loop.agent import AgentKind
from the_loop.agent import node as nodes
from the_loop.agent.spend import policy as spend_policy
from the_loop.cluster import loop as node_task
from the_loop.context import Ctx
from the_loop.refs import standing_of
from the_loop.standing import node as standing_node
from the_loop.standing import service as standing
from the_loop.standing import spend
from the_loop.store import standing as standing_store
from the_loop.store.standing import StandingStatus


def release(ctx: Ctx, key: str) -> None:
    """A running standing session of this node."""
    name = standing_of(key) or key
    rec = standing_store.get(ctx.db.connect(), name)
    if rec is None or rec.status is not StandingStatus.running:
        return
    if nodes.elsewhere(nodes.shared_name(ctx), rec.node):
        return
    standing.flush_held(ctx, name)


layer.on_release(AgentKind.STANDING, release)
spend_policy.on_spend(AgentKind.STANDING, spend.KIND)
node_task.on_node(left_behind=standing_node.left_behind)
