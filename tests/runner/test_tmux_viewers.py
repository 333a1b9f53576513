"""Viewers: a read-only client neither blocks delivery nor resizes the agent's window."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.helpers import wait_until
from tests.runner.conftest import FakeAgents
from the_loop.runner.tmux import TmuxRunner


@contextmanager
def viewer(runner: TmuxRunner, target: str, cols: int = 60, rows: int = 15) -> Iterator[int]:
    """Attach a read-only client to TARGET in a COLSxROWS pty; yield the pty master fd."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    command = runner.attach_command(target, read_only=True).unwrap()
    env = {**command.env, "TERM": "xterm-256color"}
    proc = subprocess.Popen(
        list(command.argv), stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True
    )
    os.close(slave)
    drain = threading.Thread(target=_drain, args=(master,), daemon=True)
    drain.start()
    try:
        yield master
    finally:
        proc.kill()
        proc.wait()
        # The drain ends (EIO) once the client is gone; it must end before the descriptor
        # closes: a number closed under a running read is soon another test's pipe, and the
        # drain would swallow what that pipe carries.
        drain.join(timeout=10)
        assert not drain.is_alive(), "the pty drain did not end"
        os.close(master)


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        return


def _clients(runner: TmuxRunner, target: str) -> list[str]:
    result = runner.run("list-clients", "-t", f"={target}", "-F", "#{client_readonly}")
    return result.stdout.split()


def test_read_only_viewer_does_not_block_delivery_or_resize(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    agents.spawn("loop-view", "c-view")
    with viewer(runner, "loop-view") as master:
        wait_until(lambda: _clients(runner, "loop-view") == ["1"], 10, what="viewer")
        os.write(master, b"typed by the viewer\r")
        runner.deliver("loop-view", "delivered while watched").unwrap()
        assert agents.wait_prompts("c-view", 1) == ["delivered while watched"]
        assert runner.window_size("loop-view") == (120, 40)
    assert runner.window_size("loop-view") == (120, 40)
    assert agents.prompts("c-view") == ["delivered while watched"]


def test_without_manual_size_a_viewer_would_resize(runner: TmuxRunner) -> None:
    """Control for the test above: tmux's default lets any client resize the window."""
    assert runner.run(
        "new-session", "-d", "-s", "loop-plain", "-x", "120", "-y", "40", "--", "sleep", "60"
    ).ok
    with viewer(runner, "loop-plain"):
        # the viewer's 60x15 terminal, less tmux's status line
        wait_until(lambda: runner.window_size("loop-plain") == (60, 14), 10, what="resize")


def test_attach_command_is_exact_and_unnested(
    runner: TmuxRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMUX", "/tmp/some-other-server,1,0")
    monkeypatch.setenv("TMUX_PANE", "%1")
    command = runner.attach_command("loop-a", read_only=True).unwrap()
    assert command.argv[:3] == ("tmux", "-L", runner.socket)
    assert command.argv[-6:] == ("attach-session", "-r", "-f", "ignore-size", "-t", "=loop-a")
    assert "TMUX" not in command.env and "TMUX_PANE" not in command.env
    writable = runner.attach_command("loop-a", read_only=False).unwrap()
    assert "-r" not in writable.argv
