"""Group commit of inbox acceptances on a fully-synced connection, off the event loop.

The contract: ``accept`` returns only after the acceptance (and the event
that records it) is committed with ``synchronous = FULL`` in WAL mode, i.e. after SQLite's
``fdatasync`` of the WAL returned — the delivery then survives a process crash, an OS crash and
a power loss. One writer thread per database takes every acceptance queued while its previous
commit ran and commits them all in one transaction, so concurrent acceptances share one sync.

Events handed to ``record`` (rejections, sampled) ride along with the next commit; nobody waits
for them. The thread starts on first use and ends after ``IDLE_SECONDS`` without work (its
connection closes with it); ``close`` drains what is queued and stops it.

Waking the waiters costs one ``call_soon_threadsafe`` per event loop per commit (one write to
the loop's self-pipe), not one per acceptance: under 32 connections a commit carries several
acceptances, and each wake is a system call and a turn of the loop (decision 0068).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass

from the_loop.store import events, inbox
from the_loop.store.db import Database
from the_loop.store.events import NewEvent
from the_loop.store.inbox import Acceptance, Accepted

IDLE_SECONDS = 30.0


@dataclass
class CommitFigures:
    """What the writer did since the process started: commits, acceptances, events."""

    commits: int = 0
    acceptances: int = 0
    events: int = 0
    failed_commits: int = 0
    largest_batch: int = 0
    commit_seconds: float = 0.0
    """Time spent in the commits (their sync included), summed."""


@dataclass
class _Job:
    acceptance: Acceptance
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Accepted]


class IntakeWriter:
    """One database's acceptance writer (see the module docstring)."""

    def __init__(self, db: Database, idle_seconds: float = IDLE_SECONDS) -> None:
        self.db = db
        self.idle_seconds = idle_seconds
        self.figures = CommitFigures()
        self._cond = threading.Condition()
        self._jobs: list[_Job] = []
        self._events: list[NewEvent] = []
        self._thread: threading.Thread | None = None
        self._closed = False

    async def accept(self, acceptance: Acceptance) -> Accepted:
        """ACCEPTANCE's ``Accepted`` once the synced commit that carried it returned; raises
        the ``StateError`` (or ``sqlite3.Error``) that commit raised."""
        loop = asyncio.get_running_loop()
        job = _Job(acceptance, loop, loop.create_future())
        with self._cond:
            self._jobs.append(job)
            self._wake()
        return await job.future

    def record(self, event: NewEvent) -> None:
        """Write EVENT with the next commit (or alone); never waits."""
        with self._cond:
            self._events.append(event)
            self._wake()

    def close(self, timeout: float = 5.0) -> None:
        """Commit what is queued, then stop the thread (a later ``submit`` restarts it)."""
        with self._cond:
            self._closed = True
            thread = self._thread
            self._cond.notify()
        if thread is not None:
            thread.join(timeout)
        with self._cond:
            self._closed = False

    def _wake(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="intake-writer", daemon=True)
            self._thread.start()
        else:
            self._cond.notify()

    def _take(self) -> tuple[list[_Job], list[NewEvent]] | None:
        with self._cond:
            while not self._jobs and not self._events:
                if self._closed or not self._cond.wait(self.idle_seconds):
                    if self._jobs or self._events:
                        break
                    self._thread = None
                    return None
            jobs, self._jobs = self._jobs, []
            queued, self._events = self._events, []
        return jobs, queued

    def _run(self) -> None:
        synced = False  # this thread's connection is fully synced (set once: each statement
        # the thread runs costs a GIL hand-off with the event loop)
        try:
            while (batch := self._take()) is not None:
                synced = self._commit(*batch, synced=synced)
        finally:
            self.db.close()

    def _commit(self, jobs: list[_Job], queued: list[NewEvent], synced: bool) -> bool:
        """Commit JOBS and QUEUED; returns whether the connection is fully synced now."""
        started = time.perf_counter()
        try:
            if not synced:
                self.db.sync_commits()
                synced = True
            with self.db.transaction() as tx:
                results = inbox.accept_batch(tx, [job.acceptance for job in jobs])
                events.insert_many(tx, queued)
        except Exception as exc:  # the writer thread's edge: every waiter gets the failure
            self.figures.failed_commits += 1
            _settle(jobs, [exc] * len(jobs))
            return synced
        figures = self.figures
        figures.commit_seconds += time.perf_counter() - started
        figures.commits += 1
        figures.acceptances += len(jobs)
        figures.events += len(queued)
        figures.largest_batch = max(figures.largest_batch, len(jobs))
        _settle(jobs, results)
        return synced


def _settle(jobs: list[_Job], outcomes: Sequence[Accepted | Exception]) -> None:
    """Hand each job its outcome on its own loop: one wake per loop for the whole batch."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Job, Accepted | Exception]]] = {}
    for job, outcome in zip(jobs, outcomes, strict=True):
        by_loop.setdefault(job.loop, []).append((job, outcome))
    for loop, settled in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits any more
            loop.call_soon_threadsafe(_resolve, settled)


def _resolve(settled: list[tuple[_Job, Accepted | Exception]]) -> None:
    """On the waiters' loop: resolve each future (one whose waiter went away is skipped)."""
    for job, outcome in settled:
        if job.future.done():
            continue
        if isinstance(outcome, Exception):
            job.future.set_exception(outcome)
        else:
            job.future.set_result(outcome)


_WRITERS: weakref.WeakKeyDictionary[Database, IntakeWriter] = weakref.WeakKeyDictionary()
_WRITERS_LOCK = threading.Lock()


def writer_for(db: Database) -> IntakeWriter:
    """The acceptance writer of DB (one per ``Database`` object, made on first use)."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(db)
        if writer is None:
            writer = _WRITERS[db] = IntakeWriter(db)
        return writer
