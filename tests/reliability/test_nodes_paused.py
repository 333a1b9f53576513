"""A pause outlives its node (decision 0098), on two real nodes sharing a real PostgreSQL with
the fake agent in real tmux: node B runs a session its operator paused, and B's daemon dies.
Whether B comes back and takes the session back (its agent still runs) or node A takes it over
at the item's next comment, the session is paused there: the comment is not delivered. A
``resume`` lifts it as before, and the next comment reaches the agent."""

from __future__ import annotations

import signal

import pytest

from tests.cluster import DEAD_AFTER, Node, away, cluster_db, declared_dead, events
from tests.helpers import wait_until
from the_loop.store import Database, inbox
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionRecord, SessionStatus

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def _handled(db: Database, count: int) -> None:
    """Wait until COUNT inbox items were handled, all of them successfully."""
    wait_until(
        lambda: [i.status for i in inbox.list_items(db)] == ["succeeded"] * count,
        60,
        what=f"{count} deliveries handled",
    )


def _session(db: Database, session_id: str) -> SessionRecord:
    rec = session_store.get(db.connect(), session_id)
    assert rec is not None
    return rec


@pytest.mark.parametrize("way", ["taken-back", "taken-over"])
def test_a_session_paused_when_its_node_died_stays_paused(cluster: list[Node], way: str) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    with away(a):  # A would otherwise be free to take the comments B received
        assert b.post(1, 0) == 202
        wait_until(lambda: b.seen()["1-0"] == 1, 60, what="the first comment on B's agent")
        assert b.comment(1, "the-loop pause", "d-1-pause") == 202
        _handled(db, 2)
        (rec,) = session_store.list_sessions(db.connect())
    assert rec.node == "node-b" and rec.status is SessionStatus.paused, rec
    b.daemon.stop(signal.SIGKILL)
    wait_until(lambda: declared_dead(db, "node-b"), DEAD_AFTER * 6, what="node.dead")
    assert _session(db, rec.id).status is SessionStatus.orphaned
    here = b if way == "taken-back" else a
    if way == "taken-back":
        b.daemon.start()  # its agent still runs: B takes the session back
        wait_until(
            lambda: _session(db, rec.id).status is not SessionStatus.orphaned,
            60,
            what="the session taken back by node-b",
        )
    assert a.post(1, 1) == 202  # a taken-over session is node-a's from this comment on
    _handled(db, 3)
    now = _session(db, rec.id)
    assert (now.node, now.status) == (here.name, SessionStatus.paused), (
        now,
        [(e.type, e.payload) for e in events(db, "session.moved", "session.resumed")],
    )
    assert b.seen()["1-1"] == 0 and a.seen()["1-1"] == 0, "a comment reached a paused session"
    taken = events(db, "session.moved", "session.taken_back")
    kind = "session.taken_back" if way == "taken-back" else "session.moved"
    assert [(e.type, e.payload["paused"]) for e in taken] == [(kind, True)]

    assert a.comment(1, "the-loop resume", "d-1-resume") == 202
    _handled(db, 4)
    assert _session(db, rec.id).status is SessionStatus.active
    assert a.post(1, 2) == 202
    wait_until(lambda: here.seen()["1-2"] == 1, 60, what=f"the comment after resume on {here.name}")
    assert b.seen()["1-1"] == 0 and a.seen()["1-1"] == 0, "the held comment is not replayed"
