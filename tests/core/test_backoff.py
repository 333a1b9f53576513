"""The one retry schedule (decision 0064): plain values in, seconds out, and the schedules the
docs promise for each retrier."""

from __future__ import annotations

import pytest

from the_loop import supervise
from the_loop.backoff import Backoff
from the_loop.intake.github_poller import next_wait
from the_loop.outbox import drain as outbox
from the_loop.store import inbox


def steady(backoff: Backoff, tries: int) -> list[float]:
    """The delays after 1..TRIES failures with the jitter taken out."""
    plain = backoff._replace(jitter=0.0)
    return [plain.delay(n) for n in range(1, tries + 1)]


def test_the_wait_multiplies_per_failure_up_to_the_cap() -> None:
    assert steady(Backoff(base=0.5, cap=30.0), 9) == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    assert steady(Backoff(base=1.0, cap=120.0, factor=5.0), 5) == [1, 5, 25, 120, 120]


def test_no_failure_yet_or_a_nonsense_count_waits_the_base() -> None:
    plain = Backoff(base=2.0, cap=60.0, jitter=0.0)
    assert plain.delay(0) == plain.delay(-3) == plain.delay(1) == 2.0


def test_a_very_long_outage_stays_at_the_cap() -> None:
    assert Backoff(base=1.0, cap=300.0).delay(10_000) <= 300.0
    assert Backoff(base=1.0, cap=300.0, jitter=0.0).delay(10_000) == 300.0


@pytest.mark.parametrize("failures", [1, 2, 3, 6, 9, 12])
def test_jitter_spreads_each_wait_but_never_past_the_cap(failures: int) -> None:
    backoff = Backoff(base=1.0, cap=300.0)
    middle = steady(backoff, failures)[-1]
    draws = [backoff.delay(failures) for _ in range(400)]
    assert all(0.75 * middle <= d <= min(300.0, 1.25 * middle) for d in draws)
    assert len(set(draws)) > 1, "jitter must spread retriers apart"


def test_next_at_counts_from_now() -> None:
    plain = Backoff(base=1.0, cap=300.0, jitter=0.0)
    assert plain.next_at(3, now=1_000.0) == 1_004.0
    jittered = Backoff(base=1.0, cap=300.0)
    assert 1_003.0 <= jittered.next_at(3, now=1_000.0) <= 1_005.0


def test_it_is_a_plain_value() -> None:
    assert Backoff(1.0, 300.0) == Backoff(base=1.0, cap=300.0, factor=2.0, jitter=0.25)
    assert len({Backoff(1.0, 300.0), Backoff(1.0, 300.0)}) == 1


def test_the_schedules_the_docs_promise() -> None:
    # docs/operations.md: a stalled background task tries again after 0.5 s doubling to 30 s
    stalled = Backoff(supervise.BACKOFF_BASE_SECONDS, supervise.MAX_BACKOFF_SECONDS)
    assert steady(stalled, 8) == [0.5, 1, 2, 4, 8, 16, 30, 30]
    # docs/github.md: a write-back's transient failure, 1 s doubling, at most 5 minutes
    assert steady(outbox.RETRY, 10) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 300]
    assert max(outbox.RETRY.delay(50) for _ in range(200)) <= 300.0
    # docs/github.md: an inbox delivery's transient failure, 1 s, 5 s, 25 s, then 2 minutes
    assert steady(inbox.RETRY, inbox.MAX_ATTEMPTS - 1) == [1, 5, 25, 120]
    # docs/github.md: failed poll cycles double the interval, at most 5 minutes, never below it
    assert [next_wait(60, n) for n in range(5)] == [60, 120, 240, 300, 300]
    assert next_wait(600, 4) == 600
