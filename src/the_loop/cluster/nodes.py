"""This process as a node of the cluster sharing its database (``node.name``).

A daemon claims its node name for its life (on PostgreSQL an advisory lock: two daemons with
one name are refused; on SQLite the state dir's lock already makes it the one node), writes its
row, and beats (``heartbeat``, from the ``node`` background task). Every pass of that task also
looks for peers silent longer than ``node.deadAfterSeconds`` and declares them dead: their live
sessions become ``orphaned`` and their inbox claims ready again for the live nodes.

No split brain after a pause: a node that has not written its own heartbeat for half of
``deadAfterSeconds`` claims no work (``may_claim``); one that was declared dead meanwhile
learns it from its next heartbeat and rejoins; and every claim it took before is checked
(``inbox.holds_claim``) before it is processed, since the dead-declaring node released them.
"""

from __future__ import annotations

import os
import time
from typing import Any

from the_loop import events as ev
from the_loop.agent.node import NodeState as NodeState
from the_loop.agent.node import begin_work as begin_work
from the_loop.agent.node import check_fence as check_fence
from the_loop.agent.node import dead_after as dead_after
from the_loop.agent.node import elsewhere as elsewhere
from the_loop.agent.node import end_work as end_work
from the_loop.agent.node import may_claim as may_claim
from the_loop.agent.node import node_name as node_name
from the_loop.agent.node import shared_name as shared_name
from the_loop.agent.node import state_for as state_for
from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.store import attention as attention_store
from the_loop.store import nodes as store
from the_loop.store.conn import Connection
from the_loop.store.events import NewEvent
from the_loop.store.events import insert as insert_event
from the_loop.store.nodes import Declared, NodeRecord

SOURCE = "nodes"
MIN_CLUSTER_TOKEN = 32


def claim(ctx: Ctx) -> None:
    """Make this process the one daemon of its node name, or raise ``AlreadyRunning``."""
    ctx.db.claim_daemon(node_name(ctx), dead_after(ctx))


def register(ctx: Ctx, url: str) -> None:
    """Write this node's row (alive, beating now) and record it as the node of live sessions
    that have none (older than nodes; on SQLite, of every live session: there is one node)."""
    now = time.time()
    began = time.monotonic()
    rec = NodeRecord(
        name=node_name(ctx),
        pid=os.getpid(),
        url=url,
        capacity=ctx.config.routing.max_concurrent_sessions,
        started_at=now,
        heartbeat_at=now,
        cluster=cluster_token(ctx) is not None,
    )
    with ctx.db.transaction() as tx:
        store.register(tx, rec)
        store.adopt_sessions(tx, rec.name, only_unowned=ctx.db.shared)
    state = state_for(ctx.db)
    state.beat_at, state.beat_wall = began, now


def cluster_token(ctx: Ctx) -> str | None:
    """The cluster token (``node.clusterTokenEnv``), None when unset or empty; ``BadInput``
    when it is shorter than ``MIN_CLUSTER_TOKEN`` characters. Never logged or echoed."""
    env = (ctx.started_with or ctx.loaded).config.node.cluster_token_env
    token = os.environ.get(env) if env else None
    if not token:
        return None
    if len(token) < MIN_CLUSTER_TOKEN:
        raise BadInput(
            f"${env} (node.clusterTokenEnv) is {len(token)} characters; the cluster token "
            f"must be at least {MIN_CLUSTER_TOKEN}"
        )
    return token


def alive(ctx: Ctx, name: str) -> bool:
    """Whether node NAME counts as alive: not declared dead and beating recently."""
    rec = store.get(ctx.db.connect(), name)
    return (
        rec is not None
        and rec.dead_at is None
        and rec.heartbeat_at >= time.time() - dead_after(ctx)
    )


def heartbeat(ctx: Ctx) -> list[Declared]:
    """One pass: renew this node's heartbeat (rejoining when it was declared dead), then, on a
    shared database, declare silent peers dead; returns the peers declared dead."""
    name, began, now = node_name(ctx), time.monotonic(), time.time()
    capacity = ctx.config.routing.max_concurrent_sessions
    with ctx.db.unnoticed(), ctx.db.transaction() as tx:  # the passes need not wake
        beating = store.beat(tx, name, now, capacity)
        if not beating:
            store.rejoin(tx, name, now)
    state = state_for(ctx.db)
    state.beat_at, state.beat_wall = began, now
    if not beating:
        state.rejoined += 1
        ev.emit(ctx.db, "node.rejoined", source=SOURCE, node=name)
    if not ctx.db.shared:
        return []
    return declare_silent(ctx, now)


def declare_silent(ctx: Ctx, now: float) -> list[Declared]:
    """Declare dead every peer whose heartbeat is older than ``deadAfterSeconds``; release
    claims of nodes declared dead earlier that are still held (a claim committed while the
    node was being declared)."""
    before = now - dead_after(ctx)
    found: list[Declared] = []
    for peer in store.stale(ctx.db.connect(), before, node_name(ctx)):
        with ctx.db.transaction() as tx:
            declared = store.declare_dead(tx, peer, before, now)
            if declared is not None:
                insert_event(tx, _dead_event(ctx, declared, now))
                _tell_orphaned(tx, declared, now)
        if declared is not None:
            found.append(declared)
    if not found:
        with ctx.db.transaction() as tx:
            store.release_claims(tx, now)
    return found


def _tell_orphaned(tx: Connection, declared: Declared, now: float) -> None:
    """In the transaction that declared a node dead: each session it orphaned reads
    ``blocked``, its agent gone, until the next message starts it on a live node (not the
    ``waiting`` or ``working`` its dead node last recorded)."""
    why = f"its node {declared.name} stopped answering"
    for session, item in declared.orphaned:
        attention_store.set_gone(tx, session, why, now=now, work_item=item, source=SOURCE)


def _dead_event(ctx: Ctx, declared: Declared, now: float) -> NewEvent:
    return ev.build(
        "node.dead",
        source=SOURCE,
        node=declared.name,
        by=node_name(ctx),
        silentSeconds=round(now - declared.heartbeat_at, 2),
        orphaned=[session for session, _ in declared.orphaned],
        released=declared.released,
    )


def list_nodes(ctx: Ctx) -> list[NodeRecord]:
    return store.list_nodes(ctx.db.connect())


def free_node(ctx: Ctx) -> str | None:
    """A live peer with a free slot (the emptiest), or None."""
    before = time.time() - dead_after(ctx)
    found = store.with_free_slots(ctx.db.connect(), before, node_name(ctx))
    return found[0] if found else None


def health(ctx: Ctx) -> tuple[list[str], Any]:
    """On a shared database: each node (alive or dead, its heartbeat's age, the sessions it
    runs), and a problem when this process's own node claims no work (stale heartbeat). A
    dead peer is reported (``node.dead``, this detail), not a problem of this node."""
    if not ctx.db.shared:
        return [], None
    now, limit = time.time(), dead_after(ctx)
    conn = ctx.db.connect()
    figures = {
        rec.name: {
            "alive": rec.dead_at is None and rec.heartbeat_at >= now - limit,
            "dead": rec.dead_at is not None,
            "heartbeatAgeSeconds": round(now - rec.heartbeat_at, 2),
            "sessions": store.running_on(conn, rec.name),
            "capacity": rec.capacity,
            "url": rec.url,
            "cluster": rec.cluster,
        }
        for rec in store.list_nodes(conn)
    }
    problems = []
    if state_for(ctx.db).beat_at is not None and not may_claim(ctx):
        problems.append(
            f"node {node_name(ctx)}: its own heartbeat is stale; it claims no work until it beats"
        )
    return problems, {"self": node_name(ctx), "deadAfterSeconds": limit, "nodes": figures}
