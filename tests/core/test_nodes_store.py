"""Nodes in the store: heartbeats, declaring a node dead (its sessions ``orphaned``, its inbox
claims released), claims and recovery that keep to their own node, on both backends."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from the_loop.config import parse_config_text
from the_loop.config.node import NODE_NAME_RE, default_node_name
from the_loop.errors import ConfigInvalid, Conflict
from the_loop.store import Database, inbox, open_database, sessions
from the_loop.store import nodes as store
from the_loop.store.inbox import InboxStatus
from the_loop.store.nodes import NodeRecord
from the_loop.store.sessions import SessionRecord, SessionStatus


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(tmp_path: Path, db_url: str | None) -> Database:
    return open_database(tmp_path / "state", db_url)


def _node(db: Database, name: str, at: float) -> None:
    rec = NodeRecord(name=name, pid=1, capacity=4, started_at=at, heartbeat_at=at)
    with db.transaction() as tx:
        store.register(tx, rec)


def _session(sid: str, item: str, node: str, status: SessionStatus) -> SessionRecord:
    now = time.time()
    return SessionRecord(
        id=sid,
        work_item=item,
        harness="fake",
        runner="tmux",
        cwd="/tmp",
        status=status,
        created_at=now,
        started_at=now,
        last_event_at=now,
        node=node,
    )


def _accept(db: Database, delivery: str) -> None:
    inbox.accept(db, delivery, "issue_comment", b"{}", "test", work=None, lane=delivery)


def test_declaring_a_node_dead_orphans_its_sessions_and_releases_its_claims(db: Database) -> None:
    now = time.time()
    _node(db, "a", now)
    _node(db, "b", now - 100)
    with db.transaction() as tx:
        sessions.insert(tx, _session("s-a", "github:o/r#1", "a", SessionStatus.active))
        sessions.insert(tx, _session("s-b", "github:o/r#2", "b", SessionStatus.active))
        sessions.insert(tx, _session("s-bp", "github:o/r#3", "b", SessionStatus.paused))
    for delivery in ("d1", "d2", "d3"):
        _accept(db, delivery)
    assert inbox.claim(db, "d1", "b") is not None
    assert inbox.claim(db, "d2", "a") is not None
    assert inbox.forward(db, "d2", "a", "b")  # d2 waits for b only

    assert store.stale(db.connect(), now - 30, "a") == ["b"]
    with db.transaction() as tx:
        declared = store.declare_dead(tx, "b", now - 30, now)
    assert declared is not None
    assert sorted(s for s, _ in declared.orphaned) == ["s-b", "s-bp"]
    assert declared.released == 2
    conn = db.connect()
    orphaned = sessions.get(conn, "s-b")
    assert orphaned is not None and orphaned.status is SessionStatus.orphaned and orphaned.live
    # each remembers whether its operator had paused it (decision 0098)
    assert [sessions.paused_when_orphaned(conn, s) for s in ("s-b", "s-bp")] == [False, True]
    kept = sessions.get(conn, "s-a")
    assert kept is not None and kept.status is SessionStatus.active
    # the orphaned session still holds its item: no second live session for it
    with pytest.raises(Conflict), db.transaction() as tx:
        sessions.insert(tx, _session("s-x", "github:o/r#2", "a", SessionStatus.active))
    # every item is ready for any node again, a's own claim too
    by_id = {i.delivery_id: i.status for i in inbox.list_items(db)}
    assert by_id == {"d1": InboxStatus.pending, "d2": InboxStatus.pending, "d3": "pending"}
    # declared once; its late heartbeat tells it so, and it rejoins
    with db.transaction() as tx:
        assert store.declare_dead(tx, "b", now - 30, now) is None
        assert store.beat(tx, "b", now, 4) is False
        store.rejoin(tx, "b", now)
        assert store.beat(tx, "b", now + 1, 4) is True
    rec = store.get(db.connect(), "b")
    assert rec is not None and rec.dead_at is None


def test_a_node_that_beat_meanwhile_is_not_declared_dead(db: Database) -> None:
    now = time.time()
    _node(db, "b", now - 100)
    with db.transaction() as tx:
        assert store.beat(tx, "b", now, 2)
        assert store.declare_dead(tx, "b", now - 30, now) is None


def test_claims_take_items_for_any_node_or_forwarded_to_the_claimer(db: Database) -> None:
    now = time.time()
    _node(db, "a", now)
    _node(db, "b", now)
    _accept(db, "d1")
    first = inbox.claim_next(db, node="a")
    assert first is not None and first.item.attempts == 1
    assert inbox.holds_claim(db, "d1", "a") and not inbox.holds_claim(db, "d1", "b")
    assert inbox.forward(db, "d1", "a", "b")
    assert not inbox.forward(db, "d1", "a", "b")  # no longer a's claim
    assert inbox.claim_next(db, node="a") is None  # b's now
    taken = inbox.claim_next(db, node="b")
    assert taken is not None and taken.item.delivery_id == "d1"
    assert taken.item.attempts == 1  # a hand-over is not an attempt
    inbox.succeed(db, "d1", "done")
    assert inbox.counts(db) == {"succeeded": 1}


def test_recovery_takes_back_only_its_own_nodes_claims(db: Database) -> None:
    for delivery in ("d1", "d2"):
        _accept(db, delivery)
    assert inbox.claim(db, "d1", "a") is not None
    assert inbox.claim(db, "d2", "b") is not None
    assert inbox.recover(db, node="a") == 1
    by_id = {i.delivery_id: i.status for i in inbox.list_items(db)}
    assert by_id == {"d1": InboxStatus.pending, "d2": InboxStatus.processing}
    # one node (SQLite; no node given): every interrupted claim, as before nodes existed
    assert inbox.recover(db) == 1


def test_sessions_without_a_node_are_adopted(db: Database) -> None:
    with db.transaction() as tx:
        sessions.insert(tx, _session("s1", "github:o/r#1", "x", SessionStatus.active))
        sessions.update(tx, "s1", node=None)
        sessions.insert(tx, _session("s2", "github:o/r#2", "other", SessionStatus.active))
        assert store.adopt_sessions(tx, "me", only_unowned=True) == 1
    conn = db.connect()
    owners = [rec.node for rec in sessions.list_sessions(conn)]
    assert sorted(str(owner) for owner in owners) == ["me", "other"]
    with db.transaction() as tx:
        assert store.adopt_sessions(tx, "me", only_unowned=False) == 1
    assert sessions.count_running(conn, "me") == 2 and sessions.count_running(conn, "x") == 0


@pytest.mark.parametrize("state_backend", ["sqlite"])
def test_node_names_are_validated(state_backend: str) -> None:
    assert NODE_NAME_RE.match(default_node_name())
    config = parse_config_text("version: 1\nnode: {name: web-1.eu, deadAfterSeconds: 5}\n")
    assert config.node.resolved_name == "web-1.eu"
    assert config.node.heartbeat_seconds < 5 / 2
    for bad in ("'../etc'", "'a b'", "''", "-x"):
        with pytest.raises(ConfigInvalid) as refused:
            parse_config_text(f"version: 1\nnode: {{name: {bad}}}\n")
        assert any("node.name" in p and "invalid node name" in p for p in refused.value.problems)
