"""The spend pass on two real nodes sharing one PostgreSQL: a node suspends its own idle agents
and never another node's, though it sees every session in the shared database. Two guards
keep it so: the pass skips another node's sessions (``nodes.elsewhere``), and a stop refuses a
pane its own tmux server does not hold (``holds.stop``). Either one alone passes this test;
with both removed, node-b suspends node-a's agent and the test fails."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.cluster import Node, cluster_db
from tests.helpers import wait_until
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

SUSPEND_MINUTES = 0.02  # 1.2 s
ATTENTION = {"quietSeconds": 0.5, "pollSeconds": 0.1, "notifyAfterSeconds": 3600}


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def cluster_config() -> dict[str, dict[str, Any]]:
    """node-a never suspends (0: off); node-b suspends after 1.2 s waiting."""
    return {
        "node-a": {"attention": ATTENTION, "sessions": {"suspendAfterMinutes": 0}},
        "node-b": {"attention": ATTENTION, "sessions": {"suspendAfterMinutes": SUSPEND_MINUTES}},
    }


def _pane_dead(node: Node, target: str) -> str:
    shown = node.work.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_dead}")
    return shown.stdout.strip()


@pytest.mark.parametrize("cluster", [(1, 1)], indirect=True)
def test_a_node_suspends_its_own_idle_agents_and_never_another_nodes(
    cluster: list[Node],
) -> None:
    a, b = cluster
    assert a.post(1, 0) == 202 and b.post(2, 0) == 202
    db = cluster_db(cluster)

    def started() -> dict[str, session_store.SessionRecord] | None:
        records = [r for r in session_store.list_sessions(db.connect()) if r.started_at]
        return {r.node or "": r for r in records} if len(records) == 2 else None

    by_node = wait_until(started, timeout=120, interval=0.2, what="a session on each node")
    assert set(by_node) == {"node-a", "node-b"}, "one slot each: one session on each node"
    mine, theirs = by_node["node-b"], by_node["node-a"]

    def state(rec: session_store.SessionRecord) -> str | None:
        row = attention_store.get(db.connect(), rec.id)
        return row.state if row is not None else None

    wait_until(lambda: state(mine) == "suspended", timeout=60, what="node-b's own agent suspended")
    wait_until(lambda: _pane_dead(b, mine.tmux_target) == "1", 30, what="its harness stopped")

    # node-a's agent has been waiting for three times node-b's limit while node-b's pass ran
    limit = SUSPEND_MINUTES * 60

    def waited() -> float:
        row = attention_store.get(db.connect(), theirs.id)
        if row is None or row.state != attention_store.WAITING:
            return 0.0
        return time.time() - row.since

    wait_until(lambda: waited() > 3 * limit, timeout=60, what="node-a's agent waiting long")
    assert state(theirs) == attention_store.WAITING
    assert _pane_dead(a, theirs.tmux_target) == "0", "node-a's harness still runs"
    suspended = [r.id for r in session_store.list_sessions(db.connect()) if state(r) == "suspended"]
    assert suspended == [mine.id]
