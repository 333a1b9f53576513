"""``the-loop sessions logs REF --follow``: the session's screen as a stream, like ``tail -f``.

The screen is read through the same core function as ``sessions logs`` (``views.session_screen``:
the tmux pane, a headless session's transcript, or another node's screen), every
``POLL_SECONDS``; each read is compared with the one before and only the lines that are new are
printed. An agent's screen is not a log: a line redrawn in place (a spinner, a status line) is
printed again once it changed, and lines that scrolled away between two reads are not seen
(``WINDOW`` lines are compared). The stream ends when the session closes (its last lines
printed, a note on stderr) and, quietly, on Ctrl-C.
"""

from __future__ import annotations

import contextlib
import sys
import time
from difflib import SequenceMatcher

from the_loop.context import Ctx
from the_loop.errors import LoopError

POLL_SECONDS = 0.5
WINDOW = 500
"""Lines read on each poll (at least the ``--lines`` asked for)."""


def _lines(text: str) -> list[str]:
    """TEXT's lines without the blank ones at the bottom of the screen."""
    lines = text.splitlines()
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def new_lines(before: list[str], now: list[str]) -> list[str]:
    """The lines of NOW (a later read of the same screen) that BEFORE did not show: what was
    added below, and what was redrawn in place; lines that scrolled off the top are not new."""
    if not before:
        return list(now)
    out: list[str] = []
    matcher = SequenceMatcher(None, before, now, autojunk=False)
    for op, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if op in ("insert", "replace"):
            out.extend(now[j1:j2])
    return out


def follow(ctx: Ctx, ref: str, lines: int) -> int:
    """Print the last LINES lines of REF's screen, then each new line until the session
    closes or Ctrl-C; the exit code (0)."""
    # lazy: start-up
    from the_loop.views.sessions import session_screen
    from the_loop.work_items import service as sessions

    rec = sessions.resolve(ctx, ref)  # one session: a later one of the same item is another
    window = max(lines, WINDOW)
    try:
        seen = _lines(session_screen(ctx, rec.id, window).text)
        _write(seen[-lines:])
        while sessions.resolve(ctx, rec.id).live:
            time.sleep(POLL_SECONDS)
            try:
                now = _lines(session_screen(ctx, rec.id, window).text)
            except LoopError:
                if sessions.resolve(ctx, rec.id).live:
                    raise
                break  # closed between the two reads: its pane may be gone
            _write(new_lines(seen, now))
            seen = now
        else:
            # closed: what it printed last, when its screen is still there
            with contextlib.suppress(LoopError):
                _write(new_lines(seen, _lines(session_screen(ctx, rec.id, window).text)))
        print(f"session {rec.id} of {rec.work_item} closed", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pass
    return 0


def _write(found: list[str]) -> None:
    if found:
        sys.stdout.write("".join(line + "\n" for line in found))
        sys.stdout.flush()
