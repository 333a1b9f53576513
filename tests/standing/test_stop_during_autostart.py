"""`the-loop stop` right after `the-loop start` ends everything the daemon started, including
standing agents the auto-start was still starting (issue 28): no agent process is left."""

from __future__ import annotations

import time
from pathlib import Path

from tests.standing.conftest import Standing, alive

NAMES = ["one", "two", "three"]


def agent_pids(agent_dir: Path) -> list[int]:
    """The pid of every fake agent that ever started in this installation."""
    from tests.fakes import fake_agent

    pids = []
    for path in agent_dir.glob("*.jsonl"):
        pids += [s.pid for s in fake_agent.read_starts(agent_dir, path.stem)]
    return pids


def test_stop_within_a_second_of_start_leaves_no_agent_process(st: Standing) -> None:
    st.configure(
        declared=[{"name": n, "prompt": f"you are {n}"} for n in NAMES],
        enabled=True,
        harness_env={"FAKE_AGENT_START_DELAY": "0.3"},  # each start takes a moment
    )
    started = st.env.run("start", timeout=90)
    assert started.exit_code == 0, started.stdout + started.stderr
    began = time.monotonic()
    stopped = st.env.run("stop", timeout=90)
    assert time.monotonic() - began < 60
    assert stopped.exit_code == 0, stopped.stdout + stopped.stderr
    assert "the-loop stopped" in stopped.stdout, stopped.stdout
    live = [p for p in agent_pids(st.agent_dir) if alive(p)]
    assert live == [], f"agents left running: {live}; {stopped.stdout}"
    panes = st.tmux("list-panes", "-a", "-F", "#{session_name} #{pane_dead}").stdout.split("\n")
    assert not [p for p in panes if p.endswith(" 0")], panes
    rows = st.listed()
    assert all(rows[n]["status"] in ("stopped", "absent") for n in NAMES), rows
