"""Run a program in a terminal of its own and relay it both ways, keeping back its request for
bracketed paste (``ESC [ ? 2004 h``): the terminal outside (a tmux pane) never learns that the
program asked, so tmux pastes into it unframed. That is the moment, made to last, between a
TUI drawing its input box and asking for bracketed paste (seen with Gemini 0.61 on a loaded
host: a paste then was typed, and its ``!`` switched Gemini to shell mode).

``python unbracketed.py PROGRAM [ARGS…]``; its exit status is the program's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script

from tests.fakes import pty_relay

ASK = b"\x1b[?2004h"


class Unbracketed(pty_relay.Filter):
    def __init__(self) -> None:
        self.held = b""  # the end of the last write, when it may be the start of the request

    def outward(self, data: bytes) -> bytes:
        data = (self.held + data).replace(ASK, b"")
        keep = max((n for n in range(1, len(ASK)) if data.endswith(ASK[:n])), default=0)
        self.held = data[len(data) - keep :]
        return data[: len(data) - keep]


if __name__ == "__main__":
    sys.exit(pty_relay.run(sys.argv[1:], Unbracketed()))
