"""A node's death is told, not hidden (issue 29 item 7, SPEC §17), on two real nodes sharing a
real PostgreSQL with the fake agent in real tmux: node B dies right after pasting a prompt
(before recording it); node A, taking the item over, delivers that prompt again marked to the
agent as a possible repeat and counts it in ``session.moved``; when B comes back, it ends the
agent it had left running for the item (ownership-checked), so one item never has two
agents."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from tests.cluster import DEAD_AFTER, Node, away, cluster_db, declared_dead, events
from tests.helpers import wait_until
from the_loop.cluster.placement import REPEAT_NOTE
from the_loop.store import Database, inbox
from the_loop.store import sessions as session_store

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def cluster_env() -> dict[str, dict[str, str]]:
    return {"node-b": {"THE_LOOP_CRASH_AT": "after-paste"}}


def test_a_prompt_in_flight_is_redelivered_marked_and_a_returning_node_ends_its_agent(
    cluster: list[Node],
) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    with away(a):  # A would otherwise be free to take the comment B received
        assert b.post(1, 0) == 202  # B spawns the agent of #1, pastes its prompt and dies
        _crashed(b, db)
        # read before A is back: once it declares B dead, it takes over B's claim and the item
        (rec,) = session_store.list_sessions(db.connect())
    assert rec.node == "node-b" and rec.tmux_target is not None
    wait_until(lambda: any("tok-1-0-end" in p for p in b.prompts()), 30, what="B's paste")
    assert b.work.pane_dead(rec.tmux_target) == "0", "B's agent outlives B's daemon"

    wait_until(lambda: declared_dead(db, "node-b"), DEAD_AFTER * 6, what="node.dead")
    assert a.post(1, 1) == 202  # the next comment moves #1 to A
    wait_until(lambda: len(a.prompts()) >= 2, 60, what="both prompts on A")
    first, second = a.prompts()[:2]
    assert first.startswith(REPEAT_NOTE.strip()[:30]) and "tok-1-0-end" in first, first
    assert "possible" in first or "may be a repeat" in first
    assert "tok-1-1-end" in second and "may be a repeat" not in second
    moved = events(db, "session.moved")
    assert len(moved) == 1 and moved[0].payload["inFlight"] == 1
    assert moved[0].payload["fromNode"] == "node-b" and moved[0].payload["toNode"] == "node-a"
    assert b.work.pane_dead(rec.tmux_target) == "0", "still running while B is away"

    b.daemon.start()  # B comes back (no crash point now)
    wait_until(lambda: b.work.pane_dead(rec.tmux_target) == "1", 60, what="B ends its left agent")

    def ended() -> list[Any]:  # written once the terminate returns, after the pane died
        return [
            e
            for e in events(db, "session.harness_terminated")
            if e.session_id == rec.id and "node-a" in str(e.payload.get("reason"))
        ]

    assert len(wait_until(ended, 30, what="the terminate reported")) == 1, ended()
    moved_rec = session_store.get(db.connect(), rec.id)
    assert moved_rec is not None and moved_rec.node == "node-a"
    assert a.work.pane_dead(rec.tmux_target) == "0", "the moved agent on A runs on"


def _crashed(node: Node, db: Database) -> None:
    """Wait for NODE's daemon to reach its crash point and exit; if it does not, fail with what
    it was doing: its inbox items, sessions and the end of its log."""
    assert node.daemon.proc is not None
    try:
        node.daemon.proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        items = [(i.delivery_id, i.status) for i in inbox.list_items(db)]
        sessions = [(r.id, r.node, r.status) for r in session_store.list_sessions(db.connect())]
        raise AssertionError(
            f"{node.name} did not crash within 60 s; inbox {items}; sessions {sessions};"
            f" its log:\n{node.daemon.log()[-4000:]}"
        ) from None
