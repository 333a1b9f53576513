"""Pane captures for the tmux runner: one pane, or many panes in one tmux invocation.

The screen detector reads every watched pane on each pass (``attention.pollSeconds``, 0.25 s
by default). Each ``tmux capture-pane`` is a fork and exec of the tmux client and a round trip
to the server; with 200 agents read from their screens, one process per pane kept the detector
busy all the time, and the daemon used 26 % of a core with nothing happening
(``bench/dashboard.py``). Many panes are therefore captured in one invocation: each
``capture-pane`` follows a ``display-message -p`` marker carrying a random nonce, so an agent
cannot print a marker, and the output is cut at the markers.

tmux stops a command list at its first failing command. When a batch fails, the panes captured
before the failure are kept, the failing pane is captured alone (its answer says precisely why:
absent, failed, no answer), and the panes after it go into the next batch.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from the_loop.runner.outcomes import Answer, Capture
from the_loop.runner.tmux_core import COMMAND_BUDGET, TmuxResult, command_size, failure

MARK = "::the-loop-screen-"
_COLOURS = re.compile(r"\x1b\[[0-9;:]*m")
"""What ``capture-pane -e`` adds to a screen's text: the escapes of its colours and styles."""
_ESCAPES = re.compile(r"\x1b\[(?P<sgr>[0-9;:]*)m|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
"""The escapes in a row captured with ``-e``: its styles (SGR), and links (OSC 8)."""


class Tally:
    """How many panes this process captured and how many tmux commands it ran (``/metrics``:
    the screen detector's cost)."""

    panes = 0
    commands = 0


def counted(panes: int) -> None:
    Tally.panes += panes


def capture_args(target: str, lines: int | None, *, escapes: bool = False) -> list[str]:
    """``capture-pane`` of TARGET's pane: its last LINES lines (None: the whole history),
    wrapped lines joined, with the escapes of its colours when ESCAPES."""
    start = "-" if lines is None else f"-{max(lines, 0)}"
    args = ["capture-pane", "-p", "-J", "-S", start, "-t", f"={target}:"]
    if escapes:
        args.insert(1, "-e")
    return args


def screen_text(output: str, lines: int | None) -> str:
    """A capture's OUTPUT without its trailing blank lines, cut to its last LINES lines."""
    text = output.rstrip("\n").split("\n")
    while text and not text[-1].strip():
        text.pop()
    if lines is not None:
        text = text[-lines:] if lines > 0 else []
    return "\n".join(text)


def without_colours(text: str) -> str:
    """TEXT captured with ``-e``, as ``capture-pane`` without it would have given it."""
    return _COLOURS.sub("", text)


def default_drawn(row: str) -> str:
    """The characters of ROW (a screen row captured with ``-e``) drawn in the terminal's
    default colour, neither dim nor reversed: what a person typed into an input box, not a
    hint drawn dim or coloured there, nor the character under the cursor (drawn reversed)."""
    drawn: list[str] = []
    style, at = _Style(), 0
    for found in _ESCAPES.finditer(row):
        if style.plain:
            drawn.append(row[at : found.start()])
        at = found.end()
        if found["sgr"] is not None:
            style.apply(found["sgr"])
    if style.plain:
        drawn.append(row[at:])
    return "".join(drawn)


@dataclass(slots=True)
class _Style:
    """What matters of the style text is drawn in: a colour of its own, dim, reversed."""

    coloured: bool = False
    dim: bool = False
    reversed: bool = False

    @property
    def plain(self) -> bool:
        return not (self.coloured or self.dim or self.reversed)

    def apply(self, params: str) -> None:
        """This style after the SGR escape of PARAMS (``0;2;38;5;246``)."""
        codes = params.split(";")
        skip = 0
        for at, code in enumerate(codes):
            if skip:
                skip -= 1
                continue
            head = code.split(":")[0]  # 38:5:N is one parameter
            if head in ("38", "48") and ":" not in code:  # 38;5;N or 38;2;R;G;B
                skip = 2 if codes[at + 1 : at + 2] == ["5"] else 4
            if head in ("", "0"):
                self.coloured = self.dim = self.reversed = False
            elif head in ("2", "22"):
                self.dim = head == "2"
            elif head in ("7", "27"):
                self.reversed = head == "7"
            elif head.isdigit() and (30 <= int(head) <= 38 or 90 <= int(head) <= 97):
                self.coloured = True
            elif head == "39":
                self.coloured = False


def captured(target: str, lines: int | None, result: TmuxResult, socket: str) -> Capture:
    """What one ``capture-pane`` RESULT says of TARGET."""
    counted(1)
    if result.not_found:
        detail = f"no tmux session {target} on socket {socket}"
        return Capture(target=target, answer=Answer.ABSENT, detail=detail)
    if not result.ok:
        detail = f"cannot capture {target}: {result.describe()}"
        return Capture(target=target, answer=failure(result), detail=detail)
    return Capture(target=target, text=screen_text(result.stdout, lines))


def capture_many(
    ask: Callable[..., TmuxResult],
    capture: Callable[[str, int | None], Capture],
    targets: Sequence[str],
    lines: int | None,
) -> dict[str, Capture]:
    """The captures of TARGETS (each once), asked through ASK in as few invocations as the
    command budget allows; a pane whose capture stopped a batch is asked alone (CAPTURE)."""
    out: dict[str, Capture] = {}
    pending = list(dict.fromkeys(targets))
    while pending:
        nonce = secrets.token_hex(8)
        batch, args = _batch(pending, lines, nonce)
        result = ask(*args)
        counted(len(batch))
        segments = _segments(result.stdout, nonce)
        done = len(batch) if result.ok else max(len(segments) - 1, 0)
        for index in range(done):
            out[batch[index]] = Capture(
                target=batch[index], text=screen_text(segments.get(index, ""), lines)
            )
        if done < len(batch):
            out[batch[done]] = capture(batch[done], lines)
            done += 1
        pending = pending[done:]
    return out


def _batch(pending: Sequence[str], lines: int | None, nonce: str) -> tuple[list[str], list[str]]:
    """The first panes of PENDING that fit one command, and that command's arguments."""
    batch: list[str] = []
    args: list[str] = []
    size = 0
    for target in pending:
        part = ["display-message", "-p", f"{MARK}{nonce}-{len(batch)}", ";"]
        part += capture_args(target, lines)
        grows = command_size(part) + (2 if args else 0)  # "; " joins it to the batch
        if batch and size + grows > COMMAND_BUDGET:
            break
        args += [";", *part] if args else part
        size += grows
        batch.append(target)
    return batch, args


def _segments(output: str, nonce: str) -> dict[int, str]:
    """OUTPUT cut at its markers: the text after marker N (up to the next one), by N."""
    prefix = f"{MARK}{nonce}-"
    found: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in output.split("\n"):
        if line.startswith(prefix) and line[len(prefix) :].isdigit():
            current = found.setdefault(int(line[len(prefix) :]), [])
        elif current is not None:
            current.append(line)
    return {index: "\n".join(text) for index, text in found.items()}
