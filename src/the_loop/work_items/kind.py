"""What work-item sessions register with the agent layer (``agent.kinds``): how their held
prompts are delivered once a dialog is gone, their spend policy (``work_items.spend``), whom a
wait is told (``work_items.notice``); and with the cluster wing: what placement asks of them
(a workspace, a reply) and what the node task does for them (``work_items.moves``)."""

from __future__ import annotations

from the_loop import agent as layer
from the_loop.agent import AgentKind
from the_loop.agent import node as nodes
from the_loop.agent.attention import notice as attention_notice
from the_loop.agent.spend import holds
from the_loop.agent.spend import policy as spend_policy
from the_loop.cluster import loop as node_task
from the_loop.cluster import placement
from the_loop.context import Ctx
from the_loop.outbox import github as writebacks
from the_loop.refs import WorkItemRef
from the_loop.store import prompts as queue
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionStatus
from the_loop.work_items import moves, notice, workspace
from the_loop.work_items import service as sessions
from the_loop.work_items import spend as spend


def release(ctx: Ctx, key: str) -> None:
    """A started, active session of this node, under its item's processing lock, while it has
    prompts to deliver: the pass read them pending a moment before, and the delivery that was
    pasting them may have finished since. With none left, an agent found gone stays gone until
    the next message (it is not started again for nothing)."""
    rec = session_store.get(ctx.db.connect(), key)
    if rec is None or rec.status is not SessionStatus.active or rec.started_at is None:
        return
    if nodes.elsewhere(nodes.shared_name(ctx), rec.node):
        return  # its node's own pass delivers it
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        fresh = session_store.get(ctx.db.connect(), key)
        if fresh is None or fresh.status is not SessionStatus.active:
            return
        if not queue.pending(ctx.db.connect(), key):
            return  # delivered meanwhile
        gate = holds.gate(ctx, fresh, None)
        if gate.kept is None:
            sessions.wake(ctx, fresh, stopped=gate.woke)


layer.on_release(AgentKind.WORK_ITEM, release)
spend_policy.on_spend(AgentKind.WORK_ITEM, spend.KIND)
attention_notice.on_notice(AgentKind.WORK_ITEM, notice.notify_once)
placement.hand_in(
    placement.HandIns(
        workspace=lambda ctx, ref: workspace.prepare(ctx.config, ref).path,
        reply=writebacks.reply,
    )
)
node_task.on_node(beat=moves.start_queued, rejoin=moves.take_back, left_behind=moves.left_behind)
