"""Run a program in a terminal of its own and relay it both ways, keeping back its request for
bracketed paste (``ESC [ ? 2004 h``): the terminal outside (a tmux pane) never learns that the
program asked, so tmux pastes into it unframed. That is the moment, made to last, between a
TUI drawing its input box and asking for bracketed paste (seen with Gemini 0.61 on a loaded
host: a paste then was typed, and its ``!`` switched Gemini to shell mode).

``python unbracketed.py PROGRAM [ARGS…]``; its exit status is the program's.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import sys
import termios
import tty

ASK = b"\x1b[?2004h"


def _copy_size(child: int) -> None:
    size = fcntl.ioctl(sys.stdin.fileno(), termios.TIOCGWINSZ, b"\0" * 8)
    fcntl.ioctl(child, termios.TIOCSWINSZ, size)


def main(argv: list[str]) -> int:
    pid, child = pty.fork()
    if pid == 0:
        os.execvp(argv[0], argv)
    _copy_size(child)
    signal.signal(signal.SIGWINCH, lambda *_: _copy_size(child))
    tty.setraw(sys.stdin.fileno())
    held = b""  # the end of the last read, when it may be the start of the request
    while True:
        try:
            ready, _, _ = select.select([sys.stdin.fileno(), child], [], [])
        except InterruptedError:
            continue
        if child in ready:
            try:
                data = os.read(child, 65536)
            except OSError:
                break
            if not data:
                break
            data = (held + data).replace(ASK, b"")
            keep = max((n for n in range(1, len(ASK)) if data.endswith(ASK[:n])), default=0)
            held, data = data[len(data) - keep :], data[: len(data) - keep]
            os.write(sys.stdout.fileno(), data)
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 65536)
            if not data:
                break
            os.write(child, data)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
