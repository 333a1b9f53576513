"""Run a Python module with every thread profiled (cProfile), for ``bench/idle.py --profile``.

    python bench/profiled.py OUT -m MODULE ARGS...

Each thread gets its own profiler (``threading.setprofile``). The first ``SIGUSR2`` starts the
window over (every profiler cleared); the second writes the merged stats of the window to OUT
(``pstats`` format). Not a benchmark by itself: it says where a process spends a window.
"""

from __future__ import annotations

import cProfile
import pstats
import runpy
import signal
import sys
import threading
from types import FrameType
from typing import Any

PROFILES: list[cProfile.Profile] = []
LOCK = threading.Lock()
WINDOWS = [0]


def _start() -> None:
    profile = cProfile.Profile()
    with LOCK:
        PROFILES.append(profile)
    profile.enable()


def _first_call(*_: Any) -> None:
    sys.setprofile(None)
    _start()


class _Snapshot:
    """What ``pstats.Stats`` reads from a profiler, taken without stopping it."""

    def __init__(self, stats: dict[Any, Any]) -> None:
        self.stats = dict(stats)

    def create_stats(self) -> None:
        return None


def _signal(out: str) -> Any:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        WINDOWS[0] += 1
        with LOCK:
            profiles = list(PROFILES)
        if WINDOWS[0] == 1:
            for profile in profiles:
                profile.clear()
            return
        merged: pstats.Stats | None = None
        for profile in profiles:
            profile.snapshot_stats()  # not create_stats: that would stop the profiler
            snap = _Snapshot(getattr(profile, "stats", {}))
            if not snap.stats:
                continue
            if merged is None:
                merged = pstats.Stats(snap)  # type: ignore[arg-type]
            else:
                merged.add(snap)
        if merged is not None:
            merged.dump_stats(out)

    return handle


def main() -> None:
    out, flag, module, *rest = sys.argv[1:]
    if flag != "-m":
        raise SystemExit("usage: profiled.py OUT -m MODULE ARGS...")
    signal.signal(signal.SIGUSR2, _signal(out))
    threading.setprofile(_first_call)
    sys.argv = [module, *rest]
    _start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
