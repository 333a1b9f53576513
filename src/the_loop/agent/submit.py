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

Claude Code, in the first moments after it drew its input box (a fresh start, a resume), can
still hold a message in the box when the next paste lands: the next paste goes in behind it,
and one Enter sends both as one message. Its ``UserPromptSubmit`` hook reports each prompt it
takes, so for it the watch waits for that report before the next paste, and presses Enter
again when text stays in the box without one (decision 0100).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from the_loop.agent.attention.screen import SCREEN_LINES

if TYPE_CHECKING:
    from collections.abc import Callable

    from the_loop.harness import HarnessAdapter, InputBox
    from the_loop.runner.tmux import TmuxRunner

log = logging.getLogger(__name__)

WATCH_SECONDS = 10.0
"""How long a delivery watches for its message to leave the input box."""
UNSENT_SECONDS = 1.0
"""How long the message stays in the box, seen there, before Enter is pressed again."""
QUEUED_SECONDS = 2.0
"""How long after the paste an empty box under a turn at work means the message was taken (a
loaded host draws a paste late)."""
POLL_SECONDS = 0.1
MAX_ENTERS = 2
"""Enters pressed again for one message, at most."""
MARK = 16
"""How many of the message's first and last letters and digits identify it on the screen: its
end tells it from an earlier message sent above it (messages from one person begin alike)."""


@dataclass(frozen=True, slots=True)
class Watched:
    """How a pasted message's watch ended: whether it left the input box, and how many times
    Enter was pressed again."""

    left: bool
    enters: int = 0


def see_submitted(
    tmux: TmuxRunner,
    target: str,
    adapter: HarnessAdapter,
    text: str,
    taken: Callable[[], bool] | None = None,
) -> Watched:
    """Watch TARGET's screen after TEXT was pasted with its Enter until TEXT has left the input
    box, pressing Enter again while it stays in the box; left once it did (or when ADAPTER
    reads no input box), not when it did not within ``WATCH_SECONDS`` or tmux could not show
    the screen.

    For a harness whose hooks report each prompt it takes (``reports_submit``), TAKEN says
    whether one was reported since the paste: that is the message sent, and the box is read
    only for whether the message stays in it (told by its first or last letters, a draft it
    was pasted onto included, which its first Enter would have sent too). Left it also has
    when the box stays empty under a turn at work (taken to wait its turn, which the hook
    reports only when the turn takes it). Otherwise the message also left when it is seen in
    the box and gone, or shown as the last message sent above it."""
    letters = _letters(text)
    tail = letters[-MARK:]
    if not adapter.reads_input_box or not letters:
        return Watched(True)
    reported = taken if adapter.reports_submit else None
    hooked = reported is not None
    start = time.monotonic()
    deadline = start + WATCH_SECONDS
    held_since: float | None = None
    seen, enters = False, 0
    while time.monotonic() < deadline:
        if reported is not None and reported():
            return Watched(True, enters)
        capture = tmux.capture(target, SCREEN_LINES)
        if not capture.ok:
            return Watched(False, enters)
        box = adapter.input_box(capture.text)
        now = time.monotonic()
        if box is not None and (box.folded or shows(box.held, text)):
            seen = True
            held_since = now if held_since is None else held_since
            if now - held_since >= UNSENT_SECONDS:
                if enters == MAX_ENTERS:
                    break
                if reported is not None and reported():  # while the screen was read
                    return Watched(True, enters)
                log.info("a message stayed in the input box of %s: Enter pressed again", target)
                if not tmux.run("send-keys", "-t", f"={target}:", "Enter").ok:
                    return Watched(False, enters)
                enters, held_since = enters + 1, None
        elif box is not None and _left(box, seen, tail, hooked, now - start):
            return Watched(True, enters)  # sent, or a draft that is not the message: left alone
        else:
            held_since = None  # no box drawn, or not read yet
        time.sleep(POLL_SECONDS)
    log.warning("a message pasted into %s was not seen to leave its input box", target)
    return Watched(False, enters)


def _left(box: InputBox, seen: bool, tail: str, hooked: bool, waited: float) -> bool:
    """Whether BOX, which does not hold the message, shows it gone, WAITED seconds after the
    paste. For a harness that reports its submits: empty under a turn at work ``QUEUED_SECONDS``
    after the paste (taken to wait for the turn, or a turn whose report is late; sooner, the
    paste may not be drawn yet). An emptied box is not enough there: the report of the submit
    it shows may still come, and would then be taken for the next message's. Otherwise:
    emptied after holding it, shown sent above the box, or holding other text (a person's
    draft, left alone)."""
    if hooked:
        return box.busy and waited >= QUEUED_SECONDS
    return bool(box.held) or seen or tail in _letters(box.last_sent)


def shows(held: str, text: str) -> bool:
    """Whether HELD, the text an input box shows, holds TEXT: its first or last letters. The
    watch presses Enter only on a box that shows its message (or a paste folded to a label,
    taken for it), never on a hint or a draft alone."""
    letters, shown = _letters(text), _letters(held)
    return bool(letters) and (letters[:MARK] in shown or letters[-MARK:] in shown)


def _letters(text: str) -> str:
    """TEXT's letters and digits only: the screen wraps, indents and may draw the rest apart."""
    return "".join(c for c in text if c.isalnum())
