"""The node service on a real PostgreSQL: a fresh heartbeat lets a node claim and paste, a
stale one stops it; a node declared dead learns it from its next heartbeat and rejoins, and a
claim it was processing meanwhile is fenced off; a live node declares a silent peer dead."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop import events as ev
from the_loop.cluster import nodes
from the_loop.context import Ctx, open_ctx
from the_loop.errors import BadInput, Unavailable
from the_loop.store import nodes as store
from the_loop.store.nodes import NodeRecord


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def _ctx(env: Env, name: str) -> Ctx:
    env.write_config(node={"name": name, "deadAfterSeconds": 2})
    return open_ctx(env.config_path)


def test_a_stale_heartbeat_stops_claims_and_pastes_until_it_beats(loop_env: Env) -> None:
    ctx = _ctx(loop_env, "n1")
    assert not nodes.may_claim(ctx)  # a worker claims only once its node has beaten
    nodes.check_fence(ctx)  # not a daemon: an operator's command is not fenced
    nodes.register(ctx, "http://127.0.0.1:1")
    assert nodes.may_claim(ctx)
    nodes.check_fence(ctx)
    nodes.state_for(ctx.db).beat_at = time.monotonic() - 1.5  # a pause of 1.5 s
    assert not nodes.may_claim(ctx)
    with pytest.raises(Unavailable, match="heartbeat is stale"):
        nodes.check_fence(ctx)
    problems, detail = nodes.health(ctx)
    assert problems and "claims no work" in problems[0]
    assert detail["nodes"]["n1"]["alive"] is True
    nodes.heartbeat(ctx)
    assert nodes.may_claim(ctx)
    nodes.check_fence(ctx)
    assert nodes.health(ctx)[0] == []


def test_a_node_declared_dead_rejoins_and_fences_work_it_began_before(loop_env: Env) -> None:
    ctx = _ctx(loop_env, "n1")
    nodes.register(ctx, "")
    began: list[BaseException | None] = []
    go, checked = threading.Event(), threading.Event()

    def processing() -> None:
        nodes.begin_work(ctx)  # a claim taken before the pause
        go.wait(30)
        try:
            nodes.check_fence(ctx)
            began.append(None)
        except Unavailable as exc:
            began.append(exc)
        checked.set()

    worker = threading.Thread(target=processing)
    worker.start()
    now = time.time()
    with ctx.db.transaction() as tx:  # another node found it silent
        assert store.declare_dead(tx, "n1", now + 1, now) is not None
    assert nodes.heartbeat(ctx) == []  # learns it, and rejoins
    assert nodes.state_for(ctx.db).rejoined == 1
    rec = store.get(ctx.db.connect(), "n1")
    assert rec is not None and rec.dead_at is None
    assert [e.payload["node"] for e in ev.query(ctx.db, ev.EventFilter(("node.rejoined",)))] == [
        "n1"
    ]
    go.set()
    checked.wait(30)
    worker.join(30)
    assert isinstance(began[0], Unavailable) and "declared dead" in str(began[0])
    nodes.begin_work(ctx)  # work claimed after rejoining is not fenced
    nodes.check_fence(ctx)


def test_a_live_node_declares_a_silent_peer_dead_once(loop_env: Env, tmp_path: Path) -> None:
    ctx = _ctx(loop_env, "n1")
    nodes.register(ctx, "")
    old = time.time() - 60
    with ctx.db.transaction() as tx:
        store.register(tx, NodeRecord(name="n2", pid=2, started_at=old, heartbeat_at=old))
    declared = nodes.heartbeat(ctx)
    assert [d.name for d in declared] == ["n2"]
    assert nodes.heartbeat(ctx) == []  # once
    dead = ev.query(ctx.db, ev.EventFilter(("node.dead",)))
    assert len(dead) == 1 and dead[0].payload["node"] == "n2" and dead[0].payload["by"] == "n1"
    assert dead[0].payload["silentSeconds"] >= 59
    assert not nodes.alive(ctx, "n2") and nodes.alive(ctx, "n1")
    detail = nodes.health(ctx)[1]
    assert detail["nodes"]["n2"]["dead"] is True and detail["self"] == "n1"


def test_the_cluster_token_and_url_are_published_and_a_short_token_is_refused(
    loop_env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_env.write_config(
        node={"name": "n1", "clusterTokenEnv": "LOOP_CLUSTER", "url": "http://n1.internal:8420/"}
    )
    ctx = open_ctx(loop_env.config_path)
    assert ctx.config.node.url == "http://n1.internal:8420"
    nodes.register(ctx, "http://127.0.0.1:1")  # no token in the environment
    rec = store.get(ctx.db.connect(), "n1")
    assert rec is not None and not rec.cluster
    monkeypatch.setenv("LOOP_CLUSTER", "short")
    with pytest.raises(BadInput, match="at least 32") as refused:
        nodes.cluster_token(ctx)
    assert "short" not in refused.value.message  # never echoed
    monkeypatch.setenv("LOOP_CLUSTER", "k" * 32)
    nodes.register(ctx, "http://127.0.0.1:1")
    rec = store.get(ctx.db.connect(), "n1")
    assert rec is not None and rec.cluster


@pytest.mark.parametrize(
    ("node", "problem"),
    [
        ({"url": "ftp://n1"}, "invalid node URL"),
        ({"url": "n1:8420"}, "invalid node URL"),
        ({"clusterTokenEnv": "not a name"}, "not an environment variable name"),
    ],
)
def test_bad_cluster_settings_are_refused_with_the_key(
    loop_env: Env, node: dict[str, str], problem: str
) -> None:
    loop_env.write_config(node=node)
    result = loop_env.run("config", "validate")
    assert result.exit_code == 2 and problem in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
