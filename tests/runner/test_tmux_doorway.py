"""The tmux doorway: typed results, probe states, exact addressing, the private socket."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

import pytest

from tests.fakes.tmux_server import socket_dir
from tests.helpers import wait_until
from tests.runner.conftest import FakeAgents
from the_loop.errors import NotFound, NotRunning, Unavailable
from the_loop.runner.tmux import Probe, TmuxOutcome, TmuxRunner


def _fake_tmux(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-tmux"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_missing_binary_is_no_answer_and_unknown(tmp_path: Path) -> None:
    tmux = TmuxRunner(
        "the-loop-test-missing", binary=str(tmp_path / "no-such-tmux"), work_dir=tmp_path / "work"
    )
    result = tmux.run("list-sessions")
    assert result.outcome is TmuxOutcome.NO_ANSWER
    assert not result.answered and not result.not_found
    assert tmux.probe("loop-x") is Probe.UNKNOWN
    assert tmux.list_targets() is None


def test_hanging_tmux_is_unknown_never_absent(tmp_path: Path, workdir: Path) -> None:
    tmux = TmuxRunner(
        "the-loop-test-hang",
        binary=_fake_tmux(tmp_path, "exec sleep 30"),
        timeout=0.3,
        work_dir=tmp_path / "work",
    )
    started = time.monotonic()
    assert tmux.probe("loop-x") is Probe.UNKNOWN
    with pytest.raises(Unavailable):
        tmux.spawn("loop-x", ["sleep", "1"], cwd=workdir).unwrap()
    report = tmux.terminate("loop-x", grace=0.1)
    assert report.probe is Probe.UNKNOWN and report.signalled == () and report.error
    assert time.monotonic() - started < 5, "a hung tmux must cost only its timeout"


def test_crashing_tmux_is_unknown(tmp_path: Path) -> None:
    tmux = TmuxRunner(
        "the-loop-test-crash",
        binary=_fake_tmux(tmp_path, "kill -SEGV $$"),
        work_dir=tmp_path / "work",
    )
    assert tmux.run("has-session").outcome is TmuxOutcome.NO_ANSWER
    assert tmux.probe("loop-x") is Probe.UNKNOWN


def test_probe_live_dead_absent(runner: TmuxRunner, agents: FakeAgents, workdir: Path) -> None:
    assert runner.probe("loop-nothing") is Probe.ABSENT, "no server yet: absent, not unknown"
    agents.spawn("loop-live", "c-live")
    assert runner.probe("loop-live") is Probe.LIVE
    runner.spawn("loop-dead", ["sh", "-c", "exit 3"], cwd=workdir).unwrap()
    agents.wait_probe("loop-dead", Probe.DEAD)
    status = runner.pane_status("loop-dead")
    assert status.panes and all(p.session == "loop-dead" for p in status.panes)
    assert runner.probe("loop-nothing") is Probe.ABSENT
    assert sorted(runner.list_targets() or []) == ["loop-dead", "loop-live"]


def test_prefix_names_are_never_confused(runner: TmuxRunner, agents: FakeAgents) -> None:
    pid = agents.spawn("loop-x-10", "c10")
    assert runner.probe("loop-x-1") is Probe.ABSENT
    with pytest.raises(NotRunning):
        runner.deliver("loop-x-1", "not for x-10").unwrap()
    with pytest.raises(NotFound):
        runner.capture("loop-x-1").unwrap()
    report = runner.terminate("loop-x-1", grace=0.2)
    assert report.signalled == () and report.probe is Probe.ABSENT
    assert runner.kill_session("loop-x-1").unwrap().probe is Probe.ABSENT
    assert not runner.wait_ready("loop-x-1", timeout=0.3)
    runner.deliver("loop-x-10", "for x-10").unwrap()
    assert agents.wait_prompts("c10", 1) == ["for x-10"]
    assert runner.probe("loop-x-10") is Probe.LIVE
    assert runner.pane_status("loop-x-10").panes[0].pid == pid


def test_default_server_is_never_touched(runner: TmuxRunner, agents: FakeAgents) -> None:
    assert os.environ["TMUX_TMPDIR"] in str(socket_dir())
    agents.spawn("loop-a", "c-a")
    runner.deliver("loop-a", "hello").unwrap()
    agents.wait_prompts("c-a", 1)
    runner.capture("loop-a").unwrap()
    runner.terminate("loop-a", grace=1)
    runner.kill_session("loop-a").unwrap()
    sockets = sorted(p.name for p in socket_dir().iterdir())
    assert sockets == [runner.socket], "only the private socket may exist (no 'default')"
    assert runner.base_argv()[1:3] == ["-L", runner.socket]


def test_capture_returns_last_lines(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-cap", "c-cap")
    for index in range(5):
        runner.deliver("loop-cap", f"line {index}").unwrap()
    agents.wait_prompts("c-cap", 5)
    wait_until(lambda: "#5" in runner.capture("loop-cap", 3).unwrap().text, 5)
    last = runner.capture("loop-cap", 2).unwrap().text.splitlines()
    assert len(last) == 2 and "line 4" in last[-1]
    assert "FAKE-AGENT READY" in runner.capture("loop-cap", None).unwrap().text
