"""Terminating harnesses: only our targets, only real pane pids, SIGKILL after the grace."""

from __future__ import annotations

import contextlib
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


@contextlib.contextmanager
def _focused_client(runner: TmuxRunner, target: str) -> Iterator[subprocess.Popen[bytes]]:
    """A person's writable tmux client on TARGET, in a pseudo-terminal, once tmux says it is
    focused; killed when the block ends (the person leaves)."""
    argv = runner.attach_command(target, read_only=False).unwrap()
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
        yield client
    finally:
        client.kill()
        client.wait()
        os.close(master)


def test_killing_a_dead_pane_a_focused_client_watches_leaves_the_server_running(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """An agent that asked for focus events, in a session spawned before the death hook (an
    earlier the-loop's), exits on its own while a person's (focused) tmux client watches it;
    killing its tmux session then tells that client's pane it lost focus, which tmux 3.3a
    writes into the dead pane and exits. The kill resets the pane's terminal modes first: the
    server and the other agents run on (decision 0087)."""
    agents.spawn("loop-kill-other", "c-other")
    pid = agents.spawn("loop-kill-dead", "c-dead", FAKE_AGENT_FOCUS="1")
    assert runner.run("set-hook", "-u", "-t", "=loop-kill-dead:", "pane-died").ok
    with _focused_client(runner, "loop-kill-dead"):
        os.kill(pid, signal.SIGKILL)  # the agent exits on its own while watched
        agents.wait_probe("loop-kill-dead", Probe.DEAD)
        killed = runner.kill_session("loop-kill-dead")
        assert killed.probe is Probe.ABSENT, killed
        assert runner.probe("loop-kill-other") is Probe.LIVE, "the tmux server exited"


def test_an_agent_that_exits_while_watched_is_made_safe_and_its_last_screen_kept(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """An agent that asked for focus events exits on its own while a person's focused client
    watches it. Its pane's death hook keeps its screen, resets the pane and detaches the
    client, so the person leaving cannot make tmux 3.3a exit (decisions 0087, 0088); the
    screen is its record, its history its log, and both go with the session."""
    agents.spawn("loop-die-other", "c-other")
    pid = agents.spawn("loop-die", "c-die", FAKE_AGENT_FOCUS="1")
    runner.deliver("loop-die", "remember me").unwrap()
    agents.wait_prompts("c-die", 1)
    wait_until(lambda: "GOT #1" in runner.capture("loop-die").text, 15, what="the reply")
    with _focused_client(runner, "loop-die") as client:
        os.kill(pid, signal.SIGKILL)  # the-loop looks at it (its reconciler does, at once)
        wait_until(lambda: runner.probe("loop-die") is Probe.DEAD and client.poll() is not None,
                   15, what="the client detached at death")  # fmt: skip
    assert runner.probe("loop-die-other") is Probe.LIVE, "the tmux server exited"
    kept = runner.last_screen("loop-die").unwrap().text
    assert "FAKE-AGENT GOT #1" in kept and "Pane is dead (signal 9" in kept, kept
    shown = runner.run("capture-pane", "-p", "-t", "=loop-die:")
    assert shown.ok and shown.stdout.strip() == "", "the dead pane was not reset"
    assert "FAKE-AGENT GOT #1" in runner.capture("loop-die").text  # its history keeps it
    assert runner.kill_session("loop-die").probe is Probe.ABSENT
    assert not runner.run("show-buffer", "-b", "the-loop-record-loop-die").ok


def test_a_pane_that_dies_unwatched_leaves_the_next_session_untouched(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """tmux 3.3a shows a hook's failed command, in view mode, on the next session created,
    whose pane then takes a paste into that mode: the death hook never fails, so a pane that
    dies with no client watching changes nothing for the next agent."""
    pid = agents.spawn("loop-alone", "c-alone")
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: runner.probe("loop-alone") is Probe.DEAD
               and runner.run("show-buffer", "-b", "the-loop-record-loop-alone").ok, 15,
               what="the death hook run")  # fmt: skip
    agents.spawn("loop-next", "c-next")
    mode = runner.run("display-message", "-p", "-t", "=loop-next:", "#{pane_in_mode}")
    assert mode.stdout.strip() == "0", "the next session's pane is in a mode"
    runner.deliver("loop-next", "one\ntwo").unwrap()
    assert agents.wait_prompts("c-next", 1) == ["one\ntwo"]


def test_the_record_of_a_terminated_agent_is_the_screen_it_showed(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """An agent that clears its screen as it is ended (Claude Code does) leaves, as its
    record, the screen it showed when it was terminated."""
    agents.spawn("loop-clear", "c-clear", FAKE_AGENT_CLEAR_ON_TERM="1")
    runner.deliver("loop-clear", "remember me").unwrap()
    agents.wait_prompts("c-clear", 1)
    wait_until(lambda: "GOT #1" in runner.capture("loop-clear").text, 15, what="the reply")
    report = runner.terminate("loop-clear", grace=5)
    assert report.ok and report.signalled and not report.killed, report
    agents.wait_probe("loop-clear", Probe.DEAD)
    assert "FAKE-AGENT GOT #1" in runner.last_screen("loop-clear").unwrap().text


def _ended_by_kill(runner: TmuxRunner, target: str) -> bool:
    """Whether tmux has seen TARGET's program end by SIGKILL (a look at it, as the-loop's)."""
    return [p.dead_signal for p in runner.pane_status(target).panes] == [signal.SIGKILL]


def test_an_end_tmux_did_not_see_is_seen_once_the_loop_looks(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    """Debian's tmux 3.3a now and then misses that a pane's program ended (libutempter's
    SIGCHLD handler is in place as the pane's terminal closes): the program stays a zombie
    and its pane's death hook does not run. Looking at the pane wakes tmux's reaper, so each
    of many agents killed in turn is seen ended, hook run, within seconds (about one in seven
    is missed otherwise)."""
    for n in range(16):
        target = f"loop-reap-{n}"
        pid = agents.spawn(target, f"c-reap-{n}")
        os.kill(pid, signal.SIGKILL)

        wait_until(lambda t=target: _ended_by_kill(runner, t), 5, what=f"tmux to see {target} end")
        assert runner.run("show-buffer", "-b", f"the-loop-record-{target}").ok
