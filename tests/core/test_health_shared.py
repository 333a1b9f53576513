"""The daemon's health pass is shared by concurrent callers (``status.shared``) and never
hangs its caller: a pass that is already over when its caller registers the clean-up must not
deadlock (it did, and froze the daemon's event loop: every health request then timed out)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

from the_loop.views import status


@pytest.fixture
def eager_switching() -> Iterator[None]:
    """Threads switch as often as the interpreter allows, so the health thread often ends
    its pass before the caller's next line runs (the order that deadlocked)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def test_a_pass_that_ends_at_once_never_hangs_its_caller(eager_switching: None) -> None:
    answered: list[int] = []

    def callers() -> None:
        for n in range(2000):
            found, _ = status.shared(1_000_000 + n % 3, lambda: ([], {})).result(timeout=5)
            answered.append(len(found))

    worker = threading.Thread(target=callers, daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert not worker.is_alive(), f"a health caller hung after {len(answered)} passes"
    assert len(answered) == 2000


def test_concurrent_callers_share_one_pass() -> None:
    release = threading.Event()
    runs: list[int] = []

    def slow() -> status.Checks:
        runs.append(1)
        release.wait(10)
        return ["p"], {"k": 1}

    first = status.shared(7, slow)
    second = status.shared(7, slow)
    assert first is second
    release.set()
    assert first.result(timeout=10) == (["p"], {"k": 1})
    third = status.shared(7, lambda: ([], {}))
    assert third is not first and third.result(timeout=10) == ([], {})
    assert runs == [1]
