"""Run a program in a terminal of its own and relay it both ways, dropping the Enter that comes
right after each paste: the program reads the paste and never the key that was to send it.
That is the Enter Claude Code loses in the first moments after it drew its input box (a fresh
start, a resume), made certain: the message stays in its input box, and a message pasted
after it lands behind it and goes out glued to it by the next Enter.

``python lost_enter.py PROGRAM [ARGS…]``; its exit status is the program's.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script

from tests.fakes import pty_relay

PASTE_END = b"\x1b[201~"
ENTER = b"\r"


class LostEnter(pty_relay.Filter):
    def __init__(self) -> None:
        self.after_paste = False  # the last input ended a paste: an Enter next is dropped

    def inward(self, data: bytes) -> bytes:
        if self.after_paste and data.startswith(ENTER):
            data, self.after_paste = data[len(ENTER) :], False
        if data:  # a paste at the end of this read: its Enter comes in the next
            self.after_paste = data.endswith(PASTE_END)
        return data.replace(PASTE_END + ENTER, PASTE_END)  # a paste and its Enter in one read


if __name__ == "__main__":
    sys.exit(pty_relay.run(sys.argv[1:], LostEnter()))
