"""The one retry schedule: how long to wait after consecutive failures (decision 0064).

A ``Backoff`` is a plain value: the first retry waits ``base`` seconds, each further failure
multiplies the wait by ``factor``, no wait is ever longer than ``cap``, and ``jitter`` spreads
each wait by up to that fraction either way so that many retriers do not come back together::

    RETRY = Backoff(base=1.0, cap=300.0)
    RETRY.delay(1)          # 0.75 .. 1.25 s before the second try
    RETRY.next_at(3, now)   # epoch seconds the fourth try is due (a row's ``next_attempt_at``)

A wait the other side names (``Retry-After``, a rate limit's reset) is not a backoff: callers
use that time as it is, never this schedule.
"""

from __future__ import annotations

import random
import time
from typing import NamedTuple


class Backoff(NamedTuple):
    """A retry schedule: BASE seconds after the first failure, times FACTOR after each further
    one, never above CAP, spread by ±JITTER (a fraction of the wait)."""

    base: float
    cap: float
    factor: float = 2.0
    jitter: float = 0.25

    def delay(self, failures: int) -> float:
        """Seconds to wait after FAILURES consecutive failures (1 = the first) before trying
        again; at most ``cap``."""
        exponent = min(max(0, failures - 1), 64)  # FACTOR**64 times BASE is past any cap
        wait = min(self.cap, self.base * self.factor**exponent)
        if self.jitter:
            wait *= 1.0 + self.jitter * (2.0 * random.random() - 1.0)
        return float(min(self.cap, wait))

    def next_at(self, failures: int, now: float | None = None) -> float:
        """When (epoch seconds) the next try is due after FAILURES consecutive failures, counted
        from NOW (default: the current time)."""
        return (time.time() if now is None else now) + self.delay(failures)
