"""Run a program in a terminal of its own and relay it both ways, holding back each paste from
it until the next key comes: the program then reads a paste and the Enter that followed it in
one read. That is a harness held up past the-loop's submit gap on a loaded host, made certain
(seen with Gemini 0.61 in full parallel test runs: it took the Enter for a new line, its paste
protection, and the message stayed unsent in its input box).

``python held_up.py PROGRAM [ARGS…]``; its exit status is the program's.
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

PASTE_END = b"\x1b[201~"
HOLD_SECONDS = 5.0
"""A paste no key follows within this long goes on by itself."""


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
    held = b""  # input up to and with a paste's end, waiting for the key after it
    while True:
        try:
            ready, _, _ = select.select(
                [sys.stdin.fileno(), child], [], [], HOLD_SECONDS if held else None
            )
        except InterruptedError:
            continue
        if not ready and held:
            os.write(child, held)
            held = b""
        if child in ready:
            try:
                data = os.read(child, 65536)
            except OSError:
                break
            if not data:
                break
            os.write(sys.stdout.fileno(), data)
        if sys.stdin.fileno() in ready:
            data = os.read(sys.stdin.fileno(), 65536)
            if not data:
                break
            data = held + data
            if data.endswith(PASTE_END):
                held = data
            else:
                os.write(child, data)
                held = b""
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
