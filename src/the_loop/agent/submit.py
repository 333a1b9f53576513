"""A pasted message left unsent in its harness's input box is submitted again (decision 0094).

Gemini takes an Enter that reaches it with a paste (within 40 ms) as a new line, so the-loop
sends the Enter a ``submit_gap`` after the paste. A Gemini held up longer than that (a loaded
host: seen in full parallel test runs, after a fresh start and after a resume) reads the paste
and its Enter together all the same: the message stays in its input box and the agent waits
for a turn nobody started. For a harness whose input box its adapter reads
(``HarnessAdapter.reads_input_box``), a delivery therefore watches the screen after the paste
until the message has left the box, and presses Enter again when it has stayed there
``UNSENT_SECONDS``. An Enter on an empty box does nothing, so one that crosses a late submit
is harmless; a box that holds text that is not the message (a person's draft) is left alone.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from the_loop.agent.attention.screen import SCREEN_LINES

if TYPE_CHECKING:
    from the_loop.harness import HarnessAdapter, InputBox
    from the_loop.runner.tmux import TmuxRunner

log = logging.getLogger(__name__)

WATCH_SECONDS = 10.0
"""How long a delivery watches for its message to leave the input box."""
UNSENT_SECONDS = 1.0
"""How long the message stays in the box, seen there, before Enter is pressed again."""
POLL_SECONDS = 0.1
MAX_ENTERS = 2
"""Enters pressed again for one message, at most."""
MARK = 16
"""How many of the message's first and last letters and digits identify it on the screen: its
end tells it from an earlier message sent above it (messages from one person begin alike)."""


def see_submitted(tmux: TmuxRunner, target: str, adapter: HarnessAdapter, text: str) -> bool:
    """Watch TARGET's screen after TEXT was pasted with its Enter until TEXT has left the input
    box (shown sent above it, or seen in it and gone), pressing Enter again while it stays in
    the box; True once it left (or when ADAPTER reads no input box), False when it did not
    within ``WATCH_SECONDS`` or tmux could not show the screen."""
    letters = _letters(text)
    head, tail = letters[:MARK], letters[-MARK:]
    if not adapter.reads_input_box or not letters:
        return True
    deadline = time.monotonic() + WATCH_SECONDS
    held_since: float | None = None
    seen, enters = False, 0
    while time.monotonic() < deadline:
        capture = tmux.capture(target, SCREEN_LINES)
        if not capture.ok:
            return False
        box = adapter.input_box(capture.text)
        now = time.monotonic()
        if box is not None and _holds(box, head, tail):
            seen = True
            held_since = now if held_since is None else held_since
            if now - held_since >= UNSENT_SECONDS:
                if enters == MAX_ENTERS:
                    break
                log.info("a message stayed in the input box of %s: Enter pressed again", target)
                if not tmux.run("send-keys", "-t", f"={target}:", "Enter").ok:
                    return False
                enters, held_since = enters + 1, None
        elif box is not None and (box.held or seen or tail in _letters(box.last_sent)):
            return True  # sent, or a draft that is not the message: left alone
        else:
            held_since = None  # no box drawn, or not read yet
        time.sleep(POLL_SECONDS)
    log.warning("a message pasted into %s was not seen to leave its input box", target)
    return False


def _holds(box: InputBox, head: str, tail: str) -> bool:
    """Whether BOX holds the message that HEAD begins or TAIL ends (a folded paste is taken for
    it)."""
    held = _letters(box.held)
    return box.folded or head in held or tail in held


def _letters(text: str) -> str:
    """TEXT's letters and digits only: the screen wraps, indents and may draw the rest apart."""
    return "".join(c for c in text if c.isalnum())
