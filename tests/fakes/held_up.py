"""Run a program in a terminal of its own and relay it both ways, holding back each paste from
it until the next key comes: the program then reads a paste and the Enter that followed it in
one read. That is a harness held up past the-loop's submit gap on a loaded host, made certain
(seen with Gemini 0.61 in full parallel test runs: it took the Enter for a new line, its paste
protection, and the message stayed unsent in its input box).

``python held_up.py PROGRAM [ARGS…]``; its exit status is the program's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script

from tests.fakes import pty_relay

PASTE_END = b"\x1b[201~"
HOLD_SECONDS = 5.0
"""A paste no key follows within this long goes on by itself."""


class HeldUp(pty_relay.Filter):
    def __init__(self) -> None:
        self.held = b""  # input up to and with a paste's end, waiting for the key after it

    def inward(self, data: bytes) -> bytes:
        data, self.held = self.held + data, b""
        if data.endswith(PASTE_END):
            data, self.held = b"", data
        return data

    def timeout(self) -> float | None:
        return HOLD_SECONDS if self.held else None

    def lapsed(self) -> bytes:
        data, self.held = self.held, b""
        return data


if __name__ == "__main__":
    sys.exit(pty_relay.run(sys.argv[1:], HeldUp()))
