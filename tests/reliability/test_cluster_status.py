"""``status`` on a cluster (issue 28): the nodes sharing the database as a small aligned table
(name, state, sessions, capacity, heartbeat, URL), never a Python repr; the JSON unchanged."""

from __future__ import annotations

import json
import re

import pytest

from tests.cluster import Node

REPR = re.compile(r"[{}\[\]]|'|\bNone\b|\bTrue\b|\bFalse\b")


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def test_status_shows_the_nodes_as_a_table(cluster: list[Node]) -> None:
    a = cluster[0]
    shown = a.work.env.run("status")
    assert shown.exit_code == 0, shown.stdout + shown.stderr
    assert not REPR.search(shown.stdout), shown.stdout
    lines = shown.stdout.splitlines()
    (nodes,) = [i for i, line in enumerate(lines) if line.startswith("  nodes:")]
    assert "2 on one database; this is node-a" in lines[nodes], lines[nodes]
    header, *rows = lines[nodes + 1 : nodes + 4]
    assert header.split() == ["NODE", "STATE", "SESSIONS", "CAPACITY", "HEARTBEAT", "URL"]
    assert rows[0].split()[:3] == ["node-a", "(this)", "alive"], rows
    assert rows[1].split()[:2] == ["node-b", "alive"], rows
    assert header.index("STATE") == rows[0].index("alive") == rows[1].index("alive")
    report = json.loads(a.work.env.run("status", "--format", "json").stdout)
    assert set(report["health"]["detail"]["nodes"]["nodes"]) == {"node-a", "node-b"}
