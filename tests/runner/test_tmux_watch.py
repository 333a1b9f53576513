"""The pane watch (``runner.tmux_watch``, decision 0059) on a real private tmux server: many
panes armed in one tmux invocation, a silent pane never reported, a pane that prints reported
with the time of its output, a dead pane's closed pipe reported and armed again, a pipe
started after its pane was dropped leaving no file behind; one
``list-panes -a`` probes many targets as ``probe`` does one by one."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path

from tests.helpers import wait_until
from tests.runner.test_tmux_screens import Counted
from the_loop.runner.outcomes import Probe
from the_loop.runner.tmux import TmuxRunner
from the_loop.runner.tmux_watch import PaneWatch, pane_watch, pipe_command, probe_many


def _spawn(runner: TmuxRunner, workdir: Path, target: str) -> None:
    # prints a line for each line it reads from its FIFO, nothing otherwise
    fifo = workdir / f"{target}.in"
    script = f'mkfifo {fifo}; while read -r line <{fifo}; do echo "got $line"; done'
    runner.spawn(target, ["sh", "-c", script], cwd=workdir).unwrap()
    wait_until(lambda: fifo.exists(), 10, what=f"{target} listening")


def _say(workdir: Path, target: str, text: str) -> None:
    with (workdir / f"{target}.in").open("w") as handle:
        handle.write(text + "\n")


def test_only_panes_that_print_are_reported(
    runner: TmuxRunner, workdir: Path, tmp_path: Path
) -> None:
    targets = [f"loop-watch-{i}" for i in range(5)]
    for target in targets:
        _spawn(runner, workdir, target)
    woke = threading.Event()
    ask = Counted(runner)
    watch = PaneWatch(ask, tmp_path / "watch", woke.set)
    try:
        assert watch.watch(targets) == set(targets)
        assert ask.calls == 1, "armed in one invocation"
        assert watch.watch(targets) == set() and ask.calls == 1, "armed once"
        t0 = time.monotonic()
        wait_until(lambda: time.monotonic() - t0 >= 1.0, 5, what="a quiet second")
        assert watch.take() == {} and not woke.is_set()

        before = time.time()
        _say(workdir, targets[2], "hello")
        assert woke.wait(5), "told without being asked"
        printed = wait_until(watch.take, 5, what="the printed pane")
        assert set(printed) == {targets[2]} and printed[targets[2]] >= before

        runner.kill_session(targets[3])  # its pipe closes: reported, forgotten, armed again
        wait_until(lambda: targets[3] in watch.take(), 5, what="the closed pipe")
        assert not watch.armed(targets[3])
        _spawn(runner, workdir, targets[3])
        assert watch.watch(targets) == {targets[3]}
        watch.watch(targets[:2])  # the others are forgotten
        assert not watch.armed(targets[4]) and watch.armed(targets[0])
    finally:
        watch.close()
    assert not (tmp_path / "watch").exists(), "the FIFOs and their directory are removed"


def test_a_pipe_tmux_starts_after_its_fifo_was_removed_creates_no_file(tmp_path: Path) -> None:
    """tmux starts a pane's pipe command on its own time. When the watch dropped the pane and
    removed its FIFO before the command opened it (seen once under load: a file was left in
    the watch's directory), the command ends and creates nothing, where a file would collect
    the pane's output for as long as the pane lives; with its FIFO there, it copies."""
    gone = tmp_path / "dropped"
    ended = subprocess.run(
        ["/bin/sh", "-c", pipe_command(gone)], input=b"pane output\n", capture_output=True
    )
    assert ended.returncode != 0 and not gone.exists(), ended
    fifo = tmp_path / "watched"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        copied = subprocess.run(["/bin/sh", "-c", pipe_command(fifo)], input=b"pane output\n")
        assert copied.returncode == 0 and os.read(reader, 100) == b"pane output\n"
    finally:
        os.close(reader)


def test_probe_many_agrees_with_probe(runner: TmuxRunner, workdir: Path) -> None:
    targets = [f"loop-probe-{i}" for i in range(3)]
    for target in targets:
        _spawn(runner, workdir, target)
    runner.kill_session(targets[1])
    found = probe_many(runner, [*targets, "loop-probe-none"])
    assert found == {t: runner.probe(t) for t in [*targets, "loop-probe-none"]}
    assert found[targets[0]] is Probe.LIVE and found[targets[1]] is Probe.ABSENT


def _spawn_until(runner: TmuxRunner, workdir: Path, target: str) -> Path:
    """A program in TARGET that exits once the returned file exists."""
    go = workdir / f"{target}.go"
    runner.spawn(
        target, ["sh", "-c", f"until [ -e {go} ]; do sleep 0.05; done; exit 3"], cwd=workdir
    ).unwrap()
    return go


def test_a_watched_program_that_exits_is_told_at_once(
    runner: TmuxRunner, workdir: Path, tmp_path: Path
) -> None:
    """The pane is kept by remain-on-exit and its pipe stays open: the kernel's word on the
    program's pid (a pidfd) is what says it ended, every time (tmux's `pane-died` hook, tried
    first, missed about one exit in ten under load)."""
    targets = [f"loop-exit-{i}" for i in range(8)]
    gos = [_spawn_until(runner, workdir, target) for target in targets]
    died = threading.Event()
    watch = PaneWatch(runner.run, tmp_path / "watch", on_died=died.set)
    try:
        assert watch.watch(targets) == set(targets)
        for target, go in zip(targets, gos, strict=True):
            died.clear()
            go.touch()
            assert died.wait(10), f"{target}'s exit was not told"
            wait_until(lambda t=target: runner.probe(t) is Probe.DEAD, 10, what="dead")
    finally:
        watch.close()


def test_an_agent_watched_for_its_end_alone_is_told_once_per_program(
    runner: TmuxRunner, workdir: Path, tmp_path: Path
) -> None:
    """An agent read through hooks (Claude Code) is not piped, yet its program's end is told
    at once; once per program: a look with the same start asks tmux nothing, a new program in
    the same target (a new start) is waited on again."""
    target = "loop-end-only"
    go = _spawn_until(runner, workdir, target)
    died = threading.Event()
    ask = Counted(runner)
    watch = PaneWatch(ask, tmp_path / "watch", on_died=died.set)
    try:
        assert watch.watch([], {target: 1.0}) == set()
        piped = runner.run("display-message", "-p", "-t", f"={target}:", "#{pane_pipe}")
        assert piped.stdout.strip() == "0", "an agent watched for its end alone was piped"
        go.touch()
        assert died.wait(10), "its end was not told"
        died.clear()
        calls = ask.calls
        watch.watch([], {target: 1.0})
        assert ask.calls == calls and not died.is_set()
        runner.kill_session(target)
        go.unlink()
        again = _spawn_until(runner, workdir, target)
        watch.watch([], {target: 2.0})
        again.touch()
        assert died.wait(10), "the new program's end was not told"
    finally:
        watch.close()


def _waiting_in_open(fifo: Path) -> list[int]:
    """The pids of the pipe commands that copy into FIFO and wait in ``open`` for a reader."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            copies = f"of={fifo}".encode() in (proc / "cmdline").read_bytes()
            if copies and (proc / "wchan").read_text() == "wait_for_partner":
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


def test_a_new_watch_releases_the_pipes_a_killed_daemon_left_waiting(
    runner: TmuxRunner, workdir: Path
) -> None:
    """A daemon killed with SIGKILL closes no FIFO. A pipe command that tmux starts after that
    waits in ``open`` for a reader forever, and re-arming its pane does not wake it (seen as
    stray ``dd`` processes after the SIGKILL tests). The next daemon's watch opens each FIFO
    of a watch dir whose process is gone: the command ends, and the dir is removed; the dir of
    a process that still exists is left alone."""
    target = "loop-left"
    _spawn(runner, workdir, target)
    gone = subprocess.Popen(["true"])
    gone.wait()
    left = runner.work_dir / f"watch-{gone.pid}"
    left.mkdir(parents=True)
    fifo = left / "pane"
    os.mkfifo(fifo)
    assert runner.run("pipe-pane", "-O", "-t", f"={target}:", pipe_command(fifo)).ok
    waiting = wait_until(lambda: _waiting_in_open(fifo), 10, what="the pipe waiting in open")
    alive = runner.work_dir / f"watch-{os.getppid()}"  # a process that exists: left alone
    alive.mkdir()
    watch = pane_watch(runner, lambda: None)
    try:
        assert not left.exists() and alive.exists()
        assert watch.watch([target]) == {target}  # re-armed: the old command's input ends
        wait_until(
            lambda: not any(Path(f"/proc/{pid}").exists() for pid in waiting),
            10,
            what="the left-behind pipe command to end",
        )
    finally:
        watch.close()
        if fifo.exists():  # failed: let the command go, as the watch should have
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
