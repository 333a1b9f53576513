"""Which node processes an event (several nodes on one database; a no-op with SQLite).

An event for a work item whose live session runs on another live node is that node's: the
processing node hands the delivery over (``Elsewhere``; the inbox makes it ready for that node
only). A session whose node was declared dead (``orphaned``) is taken over by the node that
processes its next event: recorded as this node's, in a workspace of this node; delivering the
event then finds no agent here and respawns it, resuming its conversation when the harness
can. A new session starts here when this node has a free slot, else on a live node that has
one (``Elsewhere`` again), else it is queued (FIFO, started by the first node with a slot).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from the_loop import events as ev
from the_loop.agent import kinds
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import Conflict
from the_loop.refs import WorkItemRef
from the_loop.store import hook_tokens, prompts
from the_loop.store import sessions as store
from the_loop.store.conn import Connection
from the_loop.store.sessions import SessionRecord, SessionStatus

SOURCE = "placement"
REPEAT_NOTE = (
    "[the-loop: this message may be a repeat. The node that gave it to you before stopped "
    "before it could record the delivery, so it is delivered again; if you already acted on "
    "it, do not act on it twice.]\n\n"
)


class Elsewhere(Exception):
    """The event belongs to node NODE: hand the delivery over to it."""

    def __init__(self, node: str) -> None:
        super().__init__(f"handed over to node {node}")
        self.node = node


class RunsElsewhere(Conflict):
    """An operator's view or verb needs the agent, which runs on node NODE (the message names
    the command to run there); the inbox hands a delivery that meets it over to NODE."""

    def __init__(self, message: str, node: str) -> None:
        super().__init__(message)
        self.node = node


@dataclass(frozen=True, slots=True)
class HandIns:
    """What placement asks of the work-item policy (registered with ``hand_in`` by
    ``work_items.kind``): a workspace on this node for an item, a reply on an item."""

    workspace: Callable[[Ctx, WorkItemRef], Path]
    reply: Callable[[Ctx, WorkItemRef, str], object]


_HANDS: list[HandIns] = []


def hand_in(hands: HandIns) -> None:
    """Register what placement asks of the work-item policy."""
    _HANDS[:] = [hands]


def _hands() -> HandIns:
    kinds.load()
    return _HANDS[0]


def this_node(ctx: Ctx) -> str:
    return nodes.node_name(ctx)


def slot_node(ctx: Ctx) -> str | None:
    """The node whose slots a new session takes: this one on a shared database; None (every
    session) with SQLite."""
    return nodes.shared_name(ctx)


def settle(ctx: Ctx, items: Iterable[WorkItemRef]) -> None:
    """With ITEMS locked, before deciding: raise ``Elsewhere`` when one has a started live
    session on another live node; take over the sessions of dead nodes."""
    if not ctx.db.shared:
        return
    me = nodes.node_name(ctx)
    for item in items:
        rec = store.live_for(ctx.db.connect(), str(item))
        if rec is None or rec.status is SessionStatus.queued:
            continue
        orphaned = rec.status is SessionStatus.orphaned
        if rec.node in (me, None) and not orphaned:
            continue
        if not orphaned and rec.node is not None and nodes.alive(ctx, rec.node):
            raise Elsewhere(rec.node)
        take_over(ctx, rec, me)


def take_over(ctx: Ctx, rec: SessionRecord, me: str) -> None:
    """Record REC (orphaned, or its node dead) as node ME's, in a workspace of ME: active, or
    paused when it was paused as its node died (a pause is the operator's, and a node's death
    does not lift it: decision 0098).

    A prompt the old node had staged may or may not have reached its agent: it is delivered
    again here, marked to the agent as a possible repeat (``REPEAT_NOTE``; at least once;
    ``inFlight`` in ``session.moved`` counts them), since a prompt lost for good is worse than
    one read twice (SPEC §17).

    ME may be REC's own node, come back while its agent still runs: the session is taken back
    (``session.taken_back``), not moved."""
    path = _hands().workspace(ctx, WorkItemRef.parse(rec.work_item))
    back = rec.node == me
    with ctx.db.transaction() as tx:
        paused = rec.status is SessionStatus.paused or store.paused_when_orphaned(tx, rec.id)
        status = SessionStatus.paused if paused else SessionStatus.active
        store.update(tx, rec.id, node=me, status=status, cwd=str(path))
        in_flight = prompts.requeue_staged(tx, rec.id, REPEAT_NOTE)
        if not back:  # its own agent, taken back, keeps its voice
            moved_here(tx, rec.id)
    where = {"node": me} if back else {"fromNode": rec.node, "toNode": me}
    ev.emit(
        ctx.db,
        "session.taken_back" if back else "session.moved",
        source=SOURCE,
        work_item=rec.work_item,
        session_id=rec.id,
        inFlight=in_flight,
        paused=paused,
        **where,
    )


def moved_here(tx: Connection, agent: str) -> None:
    """In the transaction that moves AGENT (a session, or ``standing:NAME``) from a dead node
    to this one: the agent it left there, which may still run and spool reports for its node
    to apply when it comes back, speaks for it no more (its hook tokens are revoked; the spawn
    here issues new ones)."""
    hook_tokens.revoke(tx, agent)


def report_move(ctx: Ctx, rec: SessionRecord, resumed: bool, detail: str) -> None:
    """After REC's agent was respawned (RESUMED, else fresh because of DETAIL): when this is
    its first respawn since it moved here from a dead node, say on its ticket what moved and
    what did not."""
    if not ctx.db.shared:
        return
    kinds = (
        "session.moved",
        "session.taken_back",
        "session.respawned",
        "session.transcript_restored",
    )
    last = ev.query(ctx.db, ev.EventFilter(types=kinds, work_item=rec.work_item, limit=2))
    restored = bool(last) and last[-1].type == "session.transcript_restored"
    if restored:
        last = last[:-1]
    if not last or last[-1].type != "session.moved" or last[-1].session_id != rec.id:
        return
    old = str(last[-1].payload.get("fromNode") or "another node")
    if old == nodes.node_name(ctx):
        return  # its own session, taken back (so recorded before `session.taken_back`)
    text = move_notice(rec.id, old, nodes.node_name(ctx), (resumed, restored), detail)
    _hands().reply(ctx, WorkItemRef.parse(rec.work_item), text)


def move_notice(
    session_id: str, old: str, new: str, resumed: tuple[bool, bool], detail: str
) -> str:
    """The ticket's notice of session SESSION_ID's move from node OLD to node NEW; RESUMED:
    whether its conversation was resumed, and from a transcript the store kept."""
    if resumed == (True, True):
        conversation = (
            "Its conversation was resumed from the transcript the-loop keeps (as of the "
            f"agent's last finished turn: a reply it was still writing when `{old}` stopped "
            "is lost)."
        )
    elif resumed[0]:
        conversation = "Its conversation was resumed."
    else:
        why = f" ({detail})" if detail else ""
        conversation = (
            f"Its earlier conversation could not be resumed{why}: the agent starts afresh, "
            "told which item it works on, with the latest message."
        )
    return "\n\n".join(
        [
            f"the-loop moved the agent of this item (session `{session_id}`) from node "
            f"`{old}`, which stopped answering, to node `{new}`. {conversation}",
            f"Not moved: the worktree on `{old}`. Changes that were not pushed from there "
            "(uncommitted edits, untracked files, local commits) are not in the agent's new "
            f"worktree on `{new}`.",
        ]
    )


def place_new(ctx: Ctx, full: bool) -> None:
    """For a new session this node has no FULL slot for: raise ``Elsewhere`` naming a live
    node with a free one, if any (else the session is queued here)."""
    if full and ctx.db.shared:
        other = nodes.free_node(ctx)
        if other is not None:
            raise Elsewhere(other)


def command(verb: str, *args: str, group: str = "sessions") -> str:
    """The shell command line of ``the-loop GROUP VERB ARGS`` (quoted as needed)."""
    return shlex.join(["the-loop", group, verb, *args])


def there(subject: str, node: str, command: str) -> str:
    """Why SUBJECT's agent is out of reach here, and the exact COMMAND to run on NODE."""
    return (
        f"{subject} runs on node {node}; its agent's terminal is "
        f"there: run `{command}` on {node} (for example `ssh -t {node} {command}`)"
    )


def _there(rec: SessionRecord, node: str, command: str) -> str:
    return there(f"session {rec.id} of {rec.work_item}", node, command)


def require_here(ctx: Ctx, rec: SessionRecord, command: str) -> None:
    """Raise ``RunsElsewhere`` (a ``Conflict``) naming the exact COMMAND to run on REC's node
    when its agent runs on another node (its tmux server is there)."""
    node = runs_on(ctx, rec)
    if node is not None:
        raise RunsElsewhere(_there(rec, node, command), node)


def runs_on(ctx: Ctx, rec: SessionRecord) -> str | None:
    """The other node whose tmux server holds REC's agent (or its last screen); None when it
    is this node's, or it has no agent anywhere (orphaned, queued)."""
    if not ctx.db.shared or rec.node in (None, nodes.node_name(ctx)):
        return None
    if rec.status is SessionStatus.orphaned or rec.status is SessionStatus.queued:
        return None  # no agent anywhere yet: nothing to look at elsewhere either
    return rec.node


def operate_here(ctx: Ctx, rec: SessionRecord, command: str) -> None:
    """Before an operator's verb acts on REC's agent (with its item locked): ``RunsElsewhere``
    naming COMMAND on the owning node when another live node runs it; an orphaned session is
    taken over here first."""
    try:
        settle(ctx, [WorkItemRef.parse(rec.work_item)])
    except Elsewhere as exc:
        raise RunsElsewhere(_there(rec, exc.node, command), exc.node) from None
