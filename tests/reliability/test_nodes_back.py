"""A node that comes back takes back what is still its own (decision 0096), on two real nodes
sharing a real PostgreSQL with the fake agent in real tmux: node B's daemon dies with its agent
running; once declared dead, its session reads ``blocked``; B's daemon starts again before
any comment came and takes the session back, active on B again. The next comment, sent to A,
reaches the same agent on B: no second agent is started anywhere, and when that agent is lost
later, its restart on B tells the ticket of no move."""

from __future__ import annotations

import signal

import pytest

from tests.cluster import DEAD_AFTER, Node, away, cluster_db, declared_dead, events
from tests.helpers import wait_until
from the_loop.store import attention, inbox, outbox
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionStatus

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def test_a_returning_node_takes_back_its_session_whose_agent_still_runs(
    cluster: list[Node],
) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    with away(a):  # A would otherwise be free to take the comment B received
        assert b.post(1, 0) == 202
        wait_until(lambda: b.seen()["1-0"] == 1, 60, what="the first comment on B's agent")
        # read while B alone runs, as in the other node tests
        (rec,) = session_store.list_sessions(db.connect())
    assert rec.node == "node-b" and rec.tmux_target is not None
    wait_until(  # B finished with the comment (a claim it still held would move the item)
        lambda: [i.status for i in inbox.list_items(db)] == ["succeeded"], 60, what="handled"
    )
    b.daemon.stop(signal.SIGKILL)
    wait_until(lambda: declared_dead(db, "node-b"), DEAD_AFTER * 6, what="node.dead")
    gone = attention.get(db.connect(), rec.id)
    assert gone is not None and gone.state == attention.BLOCKED, gone and gone.state
    assert b.work.pane_dead(rec.tmux_target) == "0", "B's agent outlives B's daemon"

    b.daemon.start()  # back before any comment came: the session is B's again

    def back() -> bool:
        now = session_store.get(db.connect(), rec.id)
        return now is not None and now.status is SessionStatus.active and now.node == "node-b"

    try:
        wait_until(back, 60, what="the session taken back by node-b")
    except AssertionError as exc:
        told = [(e.type, e.session_id, e.payload) for e in events(db)]
        raise AssertionError(f"{exc}: {session_store.get(db.connect(), rec.id)} {told}") from None
    (taken,) = events(db, "session.taken_back", "session.moved")  # not a move from B to B
    assert (taken.type, taken.session_id, taken.payload["node"]) == (
        "session.taken_back",
        rec.id,
        "node-b",
    )
    state = attention.get(db.connect(), rec.id)
    assert state is not None and state.state != attention.BLOCKED, state and state.state
    assert state.signal != attention.CRASH_SIGNAL  # not taken for an agent being restarted
    assert a.post(1, 1) == 202  # handed to B, which runs the agent
    wait_until(lambda: b.seen()["1-1"] == 1, 60, what="the next comment on B's same agent")
    assert not a.seen(), a.seen()  # nothing was started on A
    assert not events(db, "session.respawned", "session.spawned")[1:], "one agent, one spawn"
    assert b.work.pane_dead(rec.tmux_target) == "0"
    assert not events(db, "session.harness_terminated")
    # its agent lost later is started again on B, and the ticket is not told of a move
    b.work.tmux("kill-session", "-t", f"={rec.tmux_target}")
    assert a.post(1, 2) == 202
    wait_until(lambda: b.seen()["1-2"] == 1, 60, what="the comment after B's agent was lost")
    assert [e.payload["resumed"] for e in events(db, "session.respawned")] == [True]
    moved = [i for i in outbox.list_items(db) if "moved the agent" in i.model_dump_json()]
    assert not moved, moved
