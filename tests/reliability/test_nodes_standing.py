"""Standing sessions on two real nodes sharing one PostgreSQL (decision 0036): each belongs to
one node (the config's ``node``, else the first node that starts it); only that node starts,
stops or talks to its agent, another node answers with the command to run there; the daemon's
autostart starts only its own or unpinned ones; a dead node's session is taken over by an
explicit start elsewhere (``standing.moved``), never by autostart, and the dead node, back,
ends the agent it left running."""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
from typing import Any

import pytest

from tests.cluster import DEAD_AFTER, Node, cluster_db
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.refs import standing_target
from the_loop.store import standing as standing_store

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

STANDING = {
    "enabled": True,
    "sessions": [
        {"name": "pinned", "prompt": "watch the queue", "node": "node-b"},
        {"name": "free", "prompt": "on call", "autoStart": False},
        {"name": "local", "prompt": "tidy up", "node": "node-a"},
    ],
}


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def cluster_config() -> dict[str, dict[str, Any]]:
    return {"node-a": {"standing": STANDING}, "node-b": {"standing": STANDING}}


def _has(node: Node, name: str) -> bool:
    socket = node.work.env.socket
    target = f"={standing_target(name)}"
    found = subprocess.run(["tmux", "-L", socket, "has-session", "-t", target], capture_output=True)
    return found.returncode == 0


def _listed(node: Node) -> dict[str, Any]:
    result = node.work.env.run("standing", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    return {row["name"]: row for row in json.loads(result.stdout)}


def _refused(node: Node, owner: str, *args: str) -> None:
    """``the-loop ARGS`` on NODE exits 2 naming the exact command to run on OWNER."""
    result = node.work.env.run(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert f"runs on node {owner}" in result.stderr
    assert f"ssh -t {owner} {shlex.join(['the-loop', *args])}" in result.stderr, result.stderr


def test_a_standing_session_runs_only_on_its_node(cluster: list[Node]) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    # autostart: `pinned` (config node-b) starts on node-b only
    wait_until(lambda: _has(b, "pinned"), timeout=60, what="pinned started on node-b")
    rec = standing_store.get(db.connect(), "pinned")
    assert rec is not None and rec.node == "node-b"
    assert not _has(a, "pinned")
    wait_until(lambda: _has(a, "local"), timeout=60, what="local started on node-a")
    assert not _has(b, "local")
    row = _listed(a)["pinned"]
    assert (row["node"], row["status"]) == ("node-b", "running"), row
    table = a.work.env.run("standing", "list").stdout
    assert "NODE" in table.splitlines()[0] and "node-b" in table
    _refused(a, "node-b", "standing", "stop", "pinned")
    _refused(a, "node-b", "standing", "restart", "pinned")
    _refused(a, "node-b", "standing", "say", "pinned", "--text", "hello there")
    _refused(a, "node-b", "standing", "logs", "pinned", "-n", "5")
    said = a.daemon.api("POST", "/standing/pinned/messages", json={"text": "hi"})
    assert said.status_code == 409 and "ssh -t node-b" in said.json()["error"]["message"]
    assert _has(b, "pinned") and not _has(a, "pinned")  # nothing happened
    assert not ev.query(db, ev.EventFilter(types=("standing.said", "standing.stopped")))

    # unpinned: the first node to start it keeps it
    assert not _has(a, "free") and not _has(b, "free")
    started = a.work.env.run("standing", "start", "free")
    assert started.exit_code == 0, started.stderr
    assert _has(a, "free")
    rec = standing_store.get(db.connect(), "free")
    assert rec is not None and rec.node == "node-a"
    _refused(b, "node-a", "standing", "start", "free")
    assert _listed(b)["free"]["node"] == "node-a"
    assert not _has(b, "free")

    # without a name, a node stops (and starts) only its own
    every = b.work.env.run("standing", "stop")
    assert every.exit_code == 0, every.stdout + every.stderr
    assert "pinned" in every.stdout and "free" not in every.stdout + every.stderr
    assert not _has(b, "pinned") and _has(a, "free") and _has(a, "local")
    every = a.work.env.run("standing", "start")
    assert every.exit_code == 0, every.stdout + every.stderr
    assert "pinned" not in every.stdout + every.stderr and not _has(a, "pinned")
    # the owner does it
    stopped = b.work.env.run("standing", "stop", "pinned")
    assert stopped.exit_code == 0, stopped.stderr
    assert "already-stopped" in stopped.stdout or "stopped" in stopped.stdout
    # stopped, it stays pinned by the config: node-a still may not start it
    _refused(a, "node-b", "standing", "start", "pinned")


def test_a_dead_nodes_standing_session_moves_on_an_explicit_start_only(
    cluster: list[Node],
) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    wait_until(lambda: _has(b, "pinned"), timeout=60, what="pinned started on node-b")
    b.daemon.stop(signal.SIGKILL)
    wait_until(
        lambda: ev.query(db, ev.EventFilter(types=("node.dead",))),
        timeout=DEAD_AFTER * 6,
        what="node.dead",
    )
    assert "is dead" in (_listed(a)["pinned"]["note"] or "")
    # a boot of node-a does not steal it (its autostart takes the sessions in config order:
    # once `local`, stopped before, runs again, it has passed `pinned`)
    wait_until(lambda: _has(a, "local"), timeout=60, what="local started on node-a")
    assert a.work.env.run("standing", "stop", "local").exit_code == 0
    a.daemon.stop()
    a.daemon.start()
    wait_until(lambda: _has(a, "local"), timeout=60, what="local autostarted again")
    assert not _has(a, "pinned")
    assert not ev.query(db, ev.EventFilter(types=("standing.moved",)))
    # an explicit start takes it over
    started = a.work.env.run("standing", "start", "pinned")
    assert started.exit_code == 0, started.stderr
    assert _has(a, "pinned")
    (moved,) = ev.query(db, ev.EventFilter(types=("standing.moved",)))
    assert (moved.standing, moved.payload["fromNode"], moved.payload["toNode"]) == (
        "pinned",
        "node-b",
        "node-a",
    )
    rec = standing_store.get(db.connect(), "pinned")
    assert rec is not None and rec.node == "node-a"
    assert _listed(a)["pinned"]["node"] == "node-a"
    # node-b comes back: the agent it left running for `pinned` is ended (one agent, on A)
    target = standing_target("pinned")
    assert b.work.pane_dead(target) == "0", "node-b's agent outlived its daemon"
    b.daemon.start()
    wait_until(lambda: b.work.pane_dead(target) == "1", 60, what="node-b ends its left agent")
    ended = wait_until(  # written once the terminate returns, after the pane died
        lambda: ev.query(db, ev.EventFilter(types=("session.harness_terminated",))),
        30,
        what="the terminate reported",
    )
    assert [(e.standing, "node-a" in str(e.payload["reason"])) for e in ended] == [("pinned", True)]
    assert a.work.pane_dead(target) == "0" and _listed(b)["pinned"]["node"] == "node-a"
