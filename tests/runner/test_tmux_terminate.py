"""Terminating harnesses: only our targets, only real pane pids, SIGKILL after the grace."""

from __future__ import annotations

import fcntl
import os
import pty
import signal
import stat
import struct
import subprocess
import termios
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import fake_agent
from tests.helpers import wait_until
from tests.runner.conftest import FakeAgents
from the_loop.errors import BadInput
from the_loop.runner.base import process_identity
from the_loop.runner.tmux import PaneInfo, Probe, TmuxRunner, signalable_pids


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process of ours that no terminate may touch."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_terminate_keeps_the_dead_pane_and_its_history(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    pid = agents.spawn("loop-term", "c-term")
    runner.deliver("loop-term", "remember me").unwrap()
    agents.wait_prompts("c-term", 1)
    report = runner.terminate("loop-term", grace=5)
    assert report.ok and report.signalled == (pid,) and report.killed == ()
    agents.wait_probe("loop-term", Probe.DEAD)
    assert "loop-term" in (runner.list_targets() or [])
    assert "remember me" in runner.capture("loop-term", None).unwrap().text


def test_a_harness_ignoring_sigterm_is_killed_after_the_grace(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    pid = agents.spawn("loop-stubborn", "c-stub", FAKE_AGENT_IGNORE_TERM="1")
    report = runner.terminate("loop-stubborn", grace=0.4)
    assert report.signalled == (pid,) and report.killed == (pid,) and report.survivors == ()
    assert process_identity(pid) is None
    agents.wait_probe("loop-stubborn", Probe.DEAD)


@pytest.mark.parametrize(
    "target", ["main", "loop-", "loop-a;b", "=loop-a", "loop-a:0", "", "xloop-a", "loop-a b"]
)
def test_terminate_refuses_foreign_targets(
    runner: TmuxRunner, target: str, bystander: subprocess.Popen[bytes]
) -> None:
    report = runner.terminate(target, grace=0.1)
    assert report.refused and report.signalled == ()
    with pytest.raises(BadInput):
        runner.kill_session(target).unwrap()


def test_a_foreign_session_on_our_server_is_untouched(runner: TmuxRunner, workdir: Path) -> None:
    assert runner.run("new-session", "-d", "-s", "main", "-c", str(workdir), "--", "sleep", "60").ok
    pid = int(runner.run("display-message", "-p", "-t", "=main:", "#{pane_pid}").stdout)
    assert runner.terminate("main", grace=0.1).refused
    assert process_identity(pid) is not None


def test_pids_of_other_sessions_and_pids_up_to_1_are_never_signalled(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    lines = f"loop-t\\t0\\t0\\t\\t\\nloop-t10\\t{bystander.pid}\\t0\\t\\t\\n"
    fake = tmp_path / "fake-tmux"
    fake.write_text(f'#!/bin/sh\ncase "$*" in *list-panes*) printf "{lines}";; esac\nexit 0\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    tmux = TmuxRunner("the-loop-test-fake", binary=str(fake), work_dir=tmp_path / "w")
    report = tmux.terminate("loop-t", grace=0.1)
    assert report.signalled == () and report.killed == ()
    assert bystander.poll() is None


def test_signalable_pids_filter() -> None:
    panes = [
        PaneInfo("loop-t", pid, dead, None, None)
        for pid, dead in [(-1, False), (0, False), (1, False), (4242, False), (4343, True)]
    ] + [PaneInfo("loop-t10", 4444, False, None, None)]
    assert signalable_pids(panes, "loop-t") == [4242]


def test_terminate_absent_target_reports_nothing(runner: TmuxRunner) -> None:
    report = runner.terminate("loop-none", grace=0.1)
    assert report.ok and report.probe is Probe.ABSENT and report.signalled == ()


def test_kill_session_removes_the_target(runner: TmuxRunner, agents: FakeAgents) -> None:
    pid = agents.spawn("loop-kill", "c-kill")
    assert runner.kill_session("loop-kill").unwrap().probe is Probe.ABSENT
    wait_until(lambda: process_identity(pid) is None, 10)
    assert fake_agent.read_starts(agents.directory, "c-kill")[0].pid == pid


def test_killing_a_dead_pane_a_focused_client_watches_leaves_the_server_running(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """An agent that asked for focus events exits on its own while a person's (focused) tmux
    client watches it; killing its tmux session then tells that client's pane it lost focus,
    which tmux 3.3a writes into the dead pane and exits. The kill resets the pane's terminal
    modes first: the server and the other agents run on (decision 0087)."""
    agents.spawn("loop-kill-other", "c-other")
    pid = agents.spawn("loop-kill-dead", "c-dead", FAKE_AGENT_FOCUS="1")
    argv = runner.attach_command("loop-kill-dead", read_only=False).unwrap()
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    client = subprocess.Popen(
        list(argv.argv), stdin=slave, stdout=slave, stderr=slave,
        env={**argv.env, "TERM": "xterm-256color"}, start_new_session=True,
    )  # fmt: skip
    os.close(slave)
    try:
        focused = "#{client_flags}"
        wait_until(
            lambda: "focused" in runner.run("list-clients", "-F", focused).stdout, 15, what="client"
        )
        os.kill(pid, signal.SIGKILL)  # the agent exits on its own while watched
        agents.wait_probe("loop-kill-dead", Probe.DEAD)
        killed = runner.kill_session("loop-kill-dead")
        assert killed.probe is Probe.ABSENT, killed
        assert runner.probe("loop-kill-other") is Probe.LIVE, "the tmux server exited"
    finally:
        client.kill()
        client.wait()
        os.close(master)
