"""Run a program in a terminal of its own and relay it both ways through a ``Filter``: the
fakes that make a harness see its terminal as a loaded or unusual host would
(``unbracketed.py``, ``held_up.py``)."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import sys
import termios
import tty
from pathlib import Path


class Filter:
    """What the relay changes (nothing, as it is)."""

    def outward(self, data: bytes) -> bytes:
        """What goes on to the terminal outside of DATA the program wrote."""
        return data

    def inward(self, data: bytes) -> bytes:
        """What goes on to the program of DATA the terminal outside sent."""
        return data

    def timeout(self) -> float | None:
        """How long to wait for either side before ``lapsed`` (None: for ever)."""
        return None

    def lapsed(self) -> bytes:
        """What goes on to the program when ``timeout`` passed with nothing from either side."""
        return b""


def _copy_size(child: int) -> None:
    size = fcntl.ioctl(sys.stdin.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
    fcntl.ioctl(child, termios.TIOCSWINSZ, size)


def run(argv: list[str], relay: Filter) -> int:
    """Run ARGV under a new terminal, relayed through RELAY; the program's exit status."""
    pid, child = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    _copy_size(child)
    signal.signal(signal.SIGWINCH, lambda *_: _copy_size(child))
    tty.setraw(sys.stdin.fileno())
    while True:
        try:
            ready, _, _ = select.select([sys.stdin.fileno(), child], [], [], relay.timeout())
        except InterruptedError:
            continue
        if not ready:
            os.write(child, relay.lapsed())
        if child in ready:
            try:
                data = os.read(child, 65536)
            except OSError:
                break
            if not data:
                break
            os.write(sys.stdout.fileno(), relay.outward(data))
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 65536)
            if not data:
                break
            os.write(child, relay.inward(data))
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def wrapper(path: Path, relay: str, program: Path) -> Path:
    """Write at PATH an executable that runs PROGRAM (with its arguments) behind the relay
    script RELAY (one of these fakes' ``__file__``), for a harness's ``binary``; PATH."""
    path.write_text(f'#!/bin/sh\nexec {sys.executable} {relay} {program} "$@"\n')
    path.chmod(0o755)
    return path
