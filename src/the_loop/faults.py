"""Named fault points for the reliability tests: ``crash_point(STEP)`` kills this process with
SIGKILL when ``THE_LOOP_CRASH_AT`` names STEP, and ``pause_point(STEP)`` freezes it (SIGSTOP, the
first time it gets there) when ``THE_LOOP_PAUSE_AT`` does, so a test can prove a guarantee
(exactly-once delivery) across a real crash or a node frozen at that exact step. Unset (always,
outside those tests), each costs one dictionary look-up."""

from __future__ import annotations

import os
import signal

_ENV = "THE_LOOP_CRASH_AT"
_PAUSE_ENV = "THE_LOOP_PAUSE_AT"
_paused: set[str] = set()


def crash_point(step: str) -> None:
    """Die at once (SIGKILL, no clean-up) when ``$THE_LOOP_CRASH_AT`` is STEP."""
    if os.environ.get(_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(step: str) -> None:
    """Freeze this whole process (SIGSTOP: every thread, as a machine that stalls) the first
    time it reaches STEP when ``$THE_LOOP_PAUSE_AT`` is STEP; it goes on when sent SIGCONT."""
    if os.environ.get(_PAUSE_ENV) == step and step not in _paused:
        _paused.add(step)
        os.kill(os.getpid(), signal.SIGSTOP)
