"""Fixtures shared with other folders, and the two-node cluster of the node tests."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import DEAD_AFTER, Node
from tests.conftest import new_env
from tests.daemon import Daemon
from tests.standing.conftest import st  # noqa: F401  (the standing fixture, for the crash test)
from tests.work import Work

NodeConfig = Callable[[str, Work], dict[str, Any]]


@pytest.fixture
def node_config() -> NodeConfig:
    """Config sections each node of ``cluster`` gets besides its name and slots, by node name
    and installation (none here; a module overrides this fixture to add some)."""
    return lambda name, work: {}


@pytest.fixture
def cluster_config() -> dict[str, dict[str, Any]]:
    """Config sections each node gets besides the cluster's own (by node name); a test module
    overrides this fixture to give them more."""
    return {}


@pytest.fixture
def cluster_env() -> dict[str, dict[str, str]]:
    """Environment variables each node's daemon gets (by node name); a test module overrides
    this fixture to give them some."""
    return {}


@pytest.fixture
def cluster(
    work: Work,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    node_config: NodeConfig,
    cluster_config: dict[str, dict[str, Any]],
    cluster_env: dict[str, dict[str, str]],
) -> Iterator[list[Node]]:
    """Nodes ``node-a`` and ``node-b`` on the test's database (with the slots the test's
    indirect parameter gives, 20 each by default, and the sections ``node_config`` and
    ``cluster_config`` give each)."""
    slots = getattr(request, "param", (20, 20))
    other = new_env(tmp_path / "node-b", work.env.database_url)
    (other.root / "agents").mkdir()
    works = [work, Work(other, other.root / "agents", cli=None)]
    found = []
    for name, w, n in zip(("node-a", "node-b"), works, slots, strict=True):
        extra = {**node_config(name, w), **cluster_config.get(name, {})}
        w.configure(
            github={"enabled": True},
            routing={"maxConcurrentSessions": n, **extra.pop("routing", {})},
            node={"name": name, "deadAfterSeconds": DEAD_AFTER, **extra.pop("node", {})},
            **extra,
        )
        found.append(Node(name, w, Daemon(w)))
    for node in found:
        node.daemon.start(**cluster_env.get(node.name, {}))
    try:
        yield found
    finally:
        for node in found:
            if node.daemon.proc is not None and node.daemon.proc.poll() is None:
                node.daemon.proc.send_signal(signal.SIGCONT)
            try:
                node.daemon.stop()
            except subprocess.TimeoutExpired:
                node.daemon.stop(signal.SIGKILL)
        subprocess.run(["tmux", "-L", other.socket, "kill-server"], capture_output=True)
