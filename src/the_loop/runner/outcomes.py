"""What the tmux doorway answers: one typed outcome per operation, never an exception.

Every operation on a target returns a value whose ``answer`` says how it went (``ok``, the
target ``absent`` or ``dead``, ``occupied`` by a program the-loop must not touch, tmux gave
``no_answer``, tmux ``failed`` the command, or the doorway ``refused`` bad input without running
anything) and whose ``detail`` says why in words. Callers decide what an answer means; those
that want an error call ``unwrap()``, which raises the error class the operation maps that
answer to (for example ``NotRunning`` for a paste into a dead pane, ``NotFound`` for a capture
of an absent target).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, Self

from the_loop.errors import (
    BadInput,
    LoopError,
    NotFound,
    NotRunning,
    Refused,
    SpawnFailed,
    Unavailable,
)


class Probe(StrEnum):
    """The state of a target. ``unknown`` (tmux did not answer) is never ``absent``."""

    LIVE = "live"
    DEAD = "dead"
    ABSENT = "absent"
    UNKNOWN = "unknown"


class Answer(StrEnum):
    """How one operation on a target went."""

    OK = "ok"
    ABSENT = "absent"
    DEAD = "dead"
    OCCUPIED = "occupied"
    NO_ANSWER = "no_answer"
    FAILED = "failed"
    REFUSED = "refused"
    LAPSED = "lapsed"
    """Not done: the deadline it carried had passed when tmux came to run it."""


_COMMON: dict[Answer, type[LoopError]] = {
    Answer.ABSENT: NotRunning,
    Answer.DEAD: NotRunning,
    Answer.OCCUPIED: Refused,
    Answer.NO_ANSWER: Unavailable,
    Answer.FAILED: Unavailable,
    Answer.REFUSED: BadInput,
    Answer.LAPSED: Unavailable,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """Base of the doorway's outcomes."""

    ERRORS: ClassVar[dict[Answer, type[LoopError]]] = _COMMON

    target: str
    answer: Answer = Answer.OK
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.answer is Answer.OK

    def error(self) -> LoopError | None:
        """The error this outcome stands for (None when ``ok``)."""
        if self.answer is Answer.OK:
            return None
        return self.ERRORS.get(self.answer, Unavailable)(self.detail or f"tmux: {self.answer}")

    def unwrap(self) -> Self:
        """SELF when ``ok``; otherwise raise ``error()``."""
        failure = self.error()
        if failure is not None:
            raise failure
        return self


@dataclass(frozen=True, slots=True, kw_only=True)
class SpawnResult(Outcome):
    """A spawn: the harness's pane pid, whether a dead occupant was cleared first, and whether
    the argv went through the launcher file (too long for one tmux command)."""

    ERRORS: ClassVar[dict[Answer, type[LoopError]]] = {
        **_COMMON,
        Answer.FAILED: SpawnFailed,
    }

    pane_pid: int | None = None
    cleared_dead: bool = False
    via_launcher: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery(Outcome):
    """A paste into a target (``chars`` delivered), or why it did not happen."""

    chars: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Staged(Outcome):
    """A prompt loaded into a named buffer. ``ok`` means loaded and the pane alive just after;
    ``dead``/``absent`` mean the buffer may be loaded all the same but nothing can take it.
    ``owner`` is the ownership mark of the target, read in the same tmux command."""

    owner: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class BufferState(Outcome):
    """Whether a named buffer exists (``exists``), asked of the server."""

    exists: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Capture(Outcome):
    """The text of a pane (``text``), wrapped lines joined, trailing blank lines dropped."""

    ERRORS: ClassVar[dict[Answer, type[LoopError]]] = {**_COMMON, Answer.ABSENT: NotFound}

    text: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class Killed(Outcome):
    """A ``kill-session``: ``probe`` is the state afterwards (``absent`` when gone)."""

    probe: Probe = Probe.UNKNOWN


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner(Outcome):
    """The ownership mark recorded on a target at spawn (``owner``; None when unset)."""

    owner: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AttachCommand(Outcome):
    """Argv and environment to ``exec`` for attaching a terminal (``TMUX`` removed)."""

    argv: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
