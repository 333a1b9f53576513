"""Where this process acts as a node: its name, whether an agent's record says it runs
elsewhere, and the fence that stops a node paused past its death from acting on an agent.

The agent layer needs these before it pastes into or watches an agent; the cluster wing
(``the_loop.cluster.nodes``) writes the heartbeat and the node rows they read.
"""

from __future__ import annotations

import threading
import time
import weakref
from dataclasses import dataclass

from the_loop.context import Ctx
from the_loop.errors import Unavailable
from the_loop.store import Database


@dataclass
class NodeState:
    """What this process knows of its own node."""

    beat_at: float | None = None
    """``time.monotonic()`` when the last successful heartbeat started."""
    beat_wall: float | None = None
    """``time.time()`` written as that heartbeat's time (what peers compare with their
    ``deadAfterSeconds``)."""
    rejoined: int = 0
    """How often it found itself declared dead and rejoined."""


_STATES: weakref.WeakKeyDictionary[Database, NodeState] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def state_for(db: Database) -> NodeState:
    with _STATES_LOCK:
        found = _STATES.get(db)
        if found is None:
            found = _STATES[db] = NodeState()
        return found


def node_name(ctx: Ctx) -> str:
    """This node's name (a daemon keeps the one it started with)."""
    return (ctx.started_with or ctx.loaded).config.node.resolved_name


def shared_name(ctx: Ctx) -> str | None:
    """This node's name on a database several nodes may share; None on one only it uses."""
    return node_name(ctx) if ctx.db.shared else None


def elsewhere(here: str | None, node: str | None) -> bool:
    """Whether a session recorded on NODE runs on another node than HERE (``shared_name``):
    never on an unshared database, nor for a session older than nodes."""
    return here is not None and node not in (None, here)


def dead_after(ctx: Ctx) -> float:
    return (ctx.started_with or ctx.loaded).config.node.dead_after_seconds


def may_claim(ctx: Ctx) -> bool:
    """Whether this node may claim work: always with SQLite; on a shared database only while
    its own heartbeat is fresh (written less than half of ``deadAfterSeconds`` ago)."""
    if not ctx.db.shared:
        return True
    beat_at = state_for(ctx.db).beat_at
    return beat_at is not None and time.monotonic() - beat_at < dead_after(ctx) / 2


_WORK = threading.local()


def begin_work(ctx: Ctx) -> None:
    """This thread starts processing a claim: ``check_fence`` refuses from now on if this node
    rejoins meanwhile (it was declared dead: its claims are another node's)."""
    _WORK.epoch = state_for(ctx.db).rejoined


def end_work() -> None:
    """This thread is done with its claim: it may go on to serve anything else (an operator's
    message), which no rejoin since that claim concerns."""
    _WORK.epoch = None


def check_fence(ctx: Ctx) -> int | None:
    """Raise ``Unavailable`` unless this node may act on an agent now: its heartbeat fresh, and
    not rejoined since this thread's ``begin_work`` (a paste right after a long pause, or after
    being declared dead, could double a prompt another node delivered). Returns the deadline
    the act itself must carry (``deadline``, read before the checks: a heartbeat written after
    them extends nothing), None where the fence lets everything through (one node, or not a
    daemon)."""
    until = deadline(ctx)
    if not ctx.db.shared or state_for(ctx.db).beat_at is None:
        return None  # one node, or not a daemon (an operator's command acts on its own host)
    if not may_claim(ctx):
        raise Unavailable(f"node {node_name(ctx)}: its own heartbeat is stale; not delivering")
    epoch = getattr(_WORK, "epoch", None)
    if epoch is not None and epoch != state_for(ctx.db).rejoined:
        raise Unavailable(f"node {node_name(ctx)} was declared dead meanwhile; not delivering")
    return until


def deadline(ctx: Ctx) -> int | None:
    """The whole second (since the epoch) from which this node's act on an agent must not
    land: when its peers may declare it dead (its last heartbeat's time plus
    ``deadAfterSeconds``, rounded down). ``check_fence`` decides before an act; tmux checks
    this as it pastes (``paste_staged``) and the agent's launcher as it starts
    (``launcher_command``), so a node frozen between the two acts on nothing when it wakes.
    None on one node, or outside a daemon."""
    wall = state_for(ctx.db).beat_wall
    if not ctx.db.shared or wall is None:
        return None
    return int(wall + dead_after(ctx))
