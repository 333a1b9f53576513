"""Named crash points for the reliability tests: ``crash_point(STEP)`` kills this process with
SIGKILL when ``THE_LOOP_CRASH_AT`` names STEP, so a test can prove a guarantee (exactly-once
delivery) across a real crash at that exact step. Unset (always, outside those tests), it costs
one dictionary look-up."""

from __future__ import annotations

import os
import signal

_ENV = "THE_LOOP_CRASH_AT"


def crash_point(step: str) -> None:
    """Die at once (SIGKILL, no clean-up) when ``$THE_LOOP_CRASH_AT`` is STEP."""
    if os.environ.get(_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
