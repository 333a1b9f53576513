"""Which node runs a standing session on a shared database (decision 0036; a no-op with SQLite).

A standing session belongs to one node: the one its config entry names (``standing.sessions[].
node``), else the one recorded by its first start (``standing.node``). While its agent runs,
the node that started it keeps it whatever the config says since. Only that node starts,
resumes, stops or talks to its agent; a verb asked on another node answers ``RunsElsewhere``
(a ``Conflict``) naming the exact command to run there, as ``placement.require_here`` does for
work-item sessions. When the owner is dead, an explicit ``start`` (or ``restart``) on a live
node takes the pin over (``standing.moved``); the daemon's autostart never does.
"""

from __future__ import annotations

from the_loop import events as ev
from the_loop.cluster import nodes, placement
from the_loop.cluster.loop import LeftBehind
from the_loop.context import Ctx
from the_loop.refs import standing_key, standing_of
from the_loop.standing import spend as standing_spend
from the_loop.standing.defs import declared_entry
from the_loop.store import standing as store
from the_loop.store.standing import StandingRecord, StandingStatus

SOURCE = "standing"


def owner(ctx: Ctx, name: str, rec: StandingRecord | None) -> str | None:
    """The node NAME (with its record REC) is pinned to; None when unpinned (never started on
    a shared database and not pinned by the config)."""
    if rec is not None and rec.status is StandingStatus.running and rec.node:
        return rec.node  # its agent is there
    found = declared_entry(ctx, name)
    if found is not None and found[1].node:
        return found[1].node
    return rec.node if rec is not None else None


def elsewhere(ctx: Ctx, name: str, rec: StandingRecord | None) -> str | None:
    """The other node NAME belongs to, on a shared database; None when it is this node's (or
    unpinned, or the database is not shared)."""
    here = nodes.shared_name(ctx)
    node = owner(ctx, name, rec)
    return node if node is not None and nodes.elsewhere(here, node) else None


def command(verb: str, name: str, *args: str) -> str:
    """``the-loop standing VERB NAME ARGS``, quoted as needed."""
    return placement.command(verb, name, *args, group="standing")


def require_here(ctx: Ctx, name: str, command: str, *, take_over: bool = False) -> None:
    """With NAME's lock held, before a verb acts on its agent: raise ``RunsElsewhere`` naming
    COMMAND on the owning node when another node owns it and is alive. When that node is dead,
    the verb goes ahead here; with TAKE_OVER (an explicit start) the pin moves to this node
    (``standing.moved``)."""
    rec = store.get(ctx.db.connect(), name)
    node = elsewhere(ctx, name, rec)
    if node is None:
        return
    if nodes.alive(ctx, node):
        subject = f"standing session {name}"
        raise placement.RunsElsewhere(placement.there(subject, node, command), node)
    if take_over:
        me = nodes.node_name(ctx)
        with ctx.db.transaction() as tx:
            if rec is not None:
                store.update(tx, name, node=me)
            placement.moved_here(tx, standing_key(name))
        ev.emit(ctx.db, "standing.moved", source=SOURCE, standing=name, fromNode=node, toNode=me)


def left_behind(ctx: Ctx, owner: str) -> LeftBehind | None:
    """The agent of the standing session whose key is OWNER (a target's ownership mark in this
    node's tmux) when another node runs it now (it was taken over while this node was dead);
    None otherwise."""
    name = standing_of(owner)
    rec = store.get(ctx.db.connect(), name) if name else None
    if rec is None or rec.status is not StandingStatus.running or rec.node is None:
        return None
    if not nodes.elsewhere(nodes.shared_name(ctx), rec.node):
        return None
    return LeftBehind(standing_spend.record_agent(rec), rec.node, standing=rec.name)


def startable_here(ctx: Ctx, name: str) -> bool:
    """Whether the daemon of this node may start NAME on its own (autostart): it is this
    node's or unpinned. One pinned to a dead node stays there until an explicit start."""
    return elsewhere(ctx, name, store.get(ctx.db.connect(), name)) is None


def pin(ctx: Ctx) -> str | None:
    """The node a start here records (None with SQLite: there is one node)."""
    return nodes.shared_name(ctx)
