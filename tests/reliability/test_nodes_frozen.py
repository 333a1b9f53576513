"""A node frozen between deciding to act on an agent and acting does nothing when it wakes (two
real nodes sharing a real PostgreSQL, the fake agent in real tmux; decision 0086).

- Just before a paste: node B checks its fence, then stops (SIGSTOP, every thread); node A
  declares it dead, takes the item over and delivers the prompt B had staged, marked; when B
  wakes, the paste it was about to make is refused by tmux itself (the deadline the paste
  carries has passed by the tmux server's clock), and B ends its left-behind agent. B's agent
  never gets the prompt A delivered.
- Just before a spawn: B stops before it starts the item's agent; A takes the item over and
  runs it; when B wakes, the agent it was about to start does not start (its launcher reads
  the deadline as the pane starts), so the item never has a second agent, not even briefly."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import DEAD_AFTER, Node, away, cluster_db, declared_dead, events
from tests.helpers import wait_until
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionRecord

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def cluster_env(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    """Node B freezes itself at the step the test's indirect parameter names (a paste)."""
    return {"node-b": {"THE_LOOP_PAUSE_AT": getattr(request, "param", "before-paste")}}


def _stopped(pid: int) -> bool:
    """Whether process PID is stopped by a signal (state ``T`` in ``/proc/PID/stat``)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return stat.rpartition(")")[2].split()[0] == "T"


def _frozen_then_moved(cluster: list[Node], step: str) -> SessionRecord:
    """B takes #1 and freezes at STEP; once B is declared dead, the next comment moves #1 to A,
    which delivers both prompts. #1's session record (B's, before the move)."""
    a, b = cluster
    db = cluster_db(cluster)
    assert b.daemon.proc is not None
    pid = b.daemon.proc.pid
    with away(a):  # A would otherwise be free to take the comment B received
        assert b.post(1, 0) == 202
        wait_until(lambda: _stopped(pid), 60, what=f"B frozen at {step}")
        # read before A is back: once it declares B dead, it takes over B's claim and the item
        (rec,) = session_store.list_sessions(db.connect())
    assert rec.node == "node-b" and rec.tmux_target is not None
    wait_until(lambda: declared_dead(db, "node-b"), DEAD_AFTER * 6, what="node.dead")
    assert a.post(1, 1) == 202
    wait_until(lambda: len(a.prompts()) >= 2, 60, what="both prompts on A")
    assert "tok-1-0-end" in a.prompts()[0] and "tok-1-1-end" in a.prompts()[1]
    return rec


def test_a_node_frozen_just_before_its_paste_pastes_nothing_when_it_wakes(
    cluster: list[Node],
) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    rec = _frozen_then_moved(cluster, "its paste")  # B spawned #1's agent and staged its prompt
    assert rec.tmux_target is not None and b.daemon.proc is not None
    assert b.work.pane_dead(rec.tmux_target) == "0", "B's agent runs on while B is frozen"
    assert events(db, "session.moved")[0].payload["inFlight"] == 1

    b.daemon.proc.send_signal(signal.SIGCONT)  # B wakes where it stopped

    def ended() -> list[Any]:  # B ends its left-behind agent once it finds it rejoined
        return [
            e
            for e in events(db, "session.harness_terminated")
            if e.session_id == rec.id and "node-a" in str(e.payload.get("reason"))
        ]

    wait_until(ended, DEAD_AFTER * 6, what="B ends its left agent")
    assert b.work.pane_dead(rec.tmux_target) == "1"
    # the paste B was about to make when it froze never reached its agent
    assert not any("tok-1-0" in p for p in b.prompts()), b.prompts()
    assert [p.count("tok-1-0-end") for p in a.prompts()] == [1, 0]
    moved = session_store.get(db.connect(), rec.id)
    assert moved is not None and moved.node == "node-a"
    assert a.work.pane_dead(rec.tmux_target) == "0", "the moved agent on A runs on"


@pytest.mark.parametrize("cluster_env", ["before-spawn"], indirect=True)
def test_a_node_frozen_just_before_it_starts_an_agent_starts_none_when_it_wakes(
    cluster: list[Node],
) -> None:
    a, b = cluster
    db = cluster_db(cluster)
    rec = _frozen_then_moved(cluster, "its spawn")  # B recorded #1's session, passed its fence
    assert rec.tmux_target is not None and b.daemon.proc is not None

    b.daemon.proc.send_signal(signal.SIGCONT)  # B wakes where it stopped: at its spawn
    wait_until(
        lambda: any(e.payload.get("node") == "node-b" for e in events(db, "node.rejoined")),
        DEAD_AFTER * 6,
        what="B rejoined",
    )

    # its launcher found it too late: the pane died at once, before the agent ran (an agent
    # that ran would still run, or have been ended by B's rejoin: killed by a signal)
    shown = "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}"

    def dead() -> str | None:  # read at once with its status: B may close the session next
        out = b.work.tmux("display-message", "-p", "-t", f"={rec.tmux_target}:", shown).stdout
        return out.strip()[2:] if out.startswith("1:") else None

    ended = wait_until(dead, 30, what="B's pane dead")
    told = [(e.type, e.payload) for e in events(db) if e.session_id == rec.id][-6:]
    assert ended in ("75:", ":"), f"B's pane ended (status:signal) {ended}; events {told}"
    started = [p for p in b.work.agent_dir.glob("*.jsonl") if p.read_text().strip()]
    assert not started, [p.read_text() for p in started]  # B's agent never ran, not even once
    moved = session_store.get(db.connect(), rec.id)
    assert moved is not None and moved.node == "node-a"
    assert a.work.pane_dead(rec.tmux_target) == "0", "the moved agent on A runs on"
