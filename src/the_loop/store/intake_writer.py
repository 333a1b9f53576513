"""Group commit of inbox acceptances, power-loss durable, off the event loop.

The contract: the future ``submit`` returns resolves only after the acceptance (and the event
that records it) is committed to the inbox and on stable storage, so the delivery survives a
process crash, an OS crash and a power loss. One writer thread per database takes every
acceptance queued while its previous commit ran and handles them together, so concurrent
acceptances share one sync.

With SQLite the sync is the intake journal's (``store.intake_journal``, decision 0037): the
batch's records are appended to the journal and synced, then committed to the inbox with the
database's ordinary durability; the journal starts over once the database's own files are
synced (past ``REWIND_BYTES``, and after ``REWIND_IDLE_SECONDS`` without work). A batch that
does not fit in the journal, or a writer that could not have it (another holder, a full disk),
commits with ``synchronous = FULL`` instead (the WAL's own sync), as PostgreSQL's commits are
durable by themselves. On start the writer commits again whatever the journal still holds.

Events handed to ``record`` (rejections, sampled) ride along with the next commit; nobody waits
for them. The thread starts on first use and ends after ``IDLE_SECONDS`` without work (its
connection and journal close with it); ``close`` drains what is queued and stops it.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field, replace

from the_loop.errors import StateError
from the_loop.faults import crash_point
from the_loop.store import events, inbox
from the_loop.store.db import Database
from the_loop.store.events import NewEvent
from the_loop.store.inbox import Acceptance, Accepted, InboxStatus
from the_loop.store.intake_journal import (
    REWIND_BYTES,
    Journal,
    Record,
    mark_rewound,
    open_journal,
)

IDLE_SECONDS = 30.0
REWIND_IDLE_SECONDS = 0.25
"""Without work this long, the writer syncs the database's files and empties the journal."""


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
    journaled: int = 0
    """Acceptances made durable by the journal's sync (the rest: by a fully-synced commit)."""
    recovered: int = 0
    """Journaled acceptances committed again at start (a crash had left them)."""


@dataclass
class _Job:
    acceptance: Acceptance
    future: Future[Accepted] = field(default_factory=Future)


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
        self._journal: Journal | None = None
        self._opened = threading.Event()

    def submit(self, acceptance: Acceptance) -> Future[Accepted]:
        """Queue ACCEPTANCE; the future gets its ``Accepted`` after the durable commit, or
        the ``StateError`` that commit raised."""
        job = _Job(acceptance)
        with self._cond:
            self._jobs.append(job)
            self._wake()
        return job.future

    def record(self, event: NewEvent) -> None:
        """Write EVENT with the next commit (or alone); never waits."""
        with self._cond:
            self._events.append(event)
            self._wake()

    def start(self, timeout: float = 60.0) -> None:
        """Start the thread now and wait until it has committed what the journal held (the
        daemon, at start, before its inbox worker begins)."""
        with self._cond:
            self._wake()
        self._opened.wait(timeout)

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
        """The next batch; an empty one when the journal should start over; None to stop."""
        journal = self._journal
        with self._cond:
            while not self._jobs and not self._events:
                if journal is not None and journal.offset and not self._closed:
                    if not self._cond.wait(REWIND_IDLE_SECONDS):
                        return [], []
                    continue
                if self._closed or not self._cond.wait(self.idle_seconds):
                    if self._jobs or self._events:
                        break
                    self._thread = None
                    return None
            jobs, self._jobs = self._jobs, []
            queued, self._events = self._events, []
        return jobs, queued

    def _run(self) -> None:
        try:
            try:
                self._open()
            finally:
                self._opened.set()
            while (batch := self._take()) is not None:
                if batch[0] or batch[1]:
                    self._commit(*batch)
                else:
                    self._rewind()
        finally:
            self._finish()

    def _open(self) -> None:
        """Take the journal (if this database has one and nobody else holds it) and commit
        again what it still holds."""
        where = self.db.journal_dir()
        journal = open_journal(where) if where is not None else None
        if journal is None:
            return
        left = journal.records()
        if left:
            try:
                self.db.sync_commits()
                with self.db.transaction() as tx:
                    inbox.accept_batch(tx, [_recovered(r) for r in left])
                    mark_rewound(tx, time.time())
                journal.rewind()
            except (StateError, OSError, sqlite3.Error):
                journal.close()  # kept as it is, for the next start
                return
            self.figures.recovered += len(left)
        self._journal = journal
        self.db.sync_commits(full=False)  # the journal's sync makes them durable

    def _finish(self) -> None:
        journal, self._journal = self._journal, None
        self._opened.clear()
        if journal is not None:
            self._rewind(journal)
            journal.close()
        self.db.close()

    def _rewind(self, journal: Journal | None = None) -> None:
        """Make every commit so far durable, then start the journal over (a failure keeps
        it as it is)."""
        journal = journal or self._journal
        if journal is None or not journal.offset:
            return
        try:
            self.db.sync_commits()
            try:
                with self.db.transaction() as tx:
                    mark_rewound(tx, time.time())
            finally:
                self.db.sync_commits(full=False)
            journal.rewind()
        except (StateError, OSError, sqlite3.Error):
            self.figures.failed_commits += 1

    def _commit(self, jobs: list[_Job], queued: list[NewEvent]) -> None:
        started = time.perf_counter()
        acceptances = [job.acceptance for job in jobs]
        try:
            journaled = self._journaled(acceptances)
            if journaled is None:
                results = self._commit_synced(acceptances, queued)
            else:
                with self.db.transaction() as tx:
                    results = inbox.accept_batch(tx, journaled)
                    events.insert_many(tx, queued)
        except Exception as exc:  # the writer thread's edge: every waiter gets the failure
            self.figures.failed_commits += 1
            for job in jobs:
                job.future.set_exception(exc)
            return
        figures = self.figures
        figures.commit_seconds += time.perf_counter() - started
        figures.commits += 1
        figures.acceptances += len(jobs)
        figures.events += len(queued)
        figures.largest_batch = max(figures.largest_batch, len(jobs))
        if journaled is not None and jobs:
            figures.journaled += len(jobs)
        for job, accepted in zip(jobs, results, strict=True):
            job.future.set_result(accepted)
        journal = self._journal
        if journal is not None and journal.offset > REWIND_BYTES:
            self._rewind()

    def _commit_synced(
        self, acceptances: list[Acceptance], queued: list[NewEvent]
    ) -> list[Accepted]:
        """Commit with ``synchronous = FULL`` (no journal, or the batch does not fit)."""
        self.db.sync_commits()
        try:
            with self.db.transaction() as tx:
                results = inbox.accept_batch(tx, acceptances)
                events.insert_many(tx, queued)
        finally:
            if self._journal is not None:
                self.db.sync_commits(full=False)
        return results

    def _journaled(self, acceptances: list[Acceptance]) -> list[Acceptance] | None:
        """Append ACCEPTANCES to the journal and sync it; the acceptances to commit (each
        recording the event that was journaled with it), or None when there is no journal or
        they do not fit (the commit is then fully synced)."""
        journal = self._journal
        if journal is None:
            return None
        if not acceptances:
            return []  # events alone: nobody waits for them, nothing to sync
        records = [_record(a) for a in acceptances]
        encoded = [r.encode() for r in records]
        if not journal.fits(encoded):
            if journal.offset:
                self._rewind()
            if journal.offset or not journal.fits(encoded):
                return None
        journal.append(encoded)
        crash_point("intake-journaled")  # the reliability tests: synced, not yet committed
        return [
            replace(a, record=_reuse(a, r.received))
            for a, r in zip(acceptances, records, strict=True)
        ]


def _record(acceptance: Acceptance) -> Record:
    """ACCEPTANCE as a journal record, with the event it records when it is new."""
    fresh = Accepted(
        delivery_id=acceptance.delivery_id, duplicate=False, status=InboxStatus.pending
    )
    received = acceptance.record(fresh) if acceptance.record is not None else None
    return Record(
        acceptance.delivery_id,
        acceptance.event,
        acceptance.source,
        acceptance.payload,
        acceptance.work,
        acceptance.lane,
        received,
    )


def _reuse(
    acceptance: Acceptance, received: NewEvent | None
) -> Callable[[Accepted], NewEvent | None]:
    """The event recording an outcome: the journaled one for a new delivery (built once)."""
    own = acceptance.record

    def record(accepted: Accepted) -> NewEvent | None:
        if not accepted.duplicate:
            return received
        return own(accepted) if own is not None else None

    return record


def _recovered(record: Record) -> Acceptance:
    """A journaled acceptance to commit again: new, it records its journaled event; a
    duplicate (committed before the crash) records nothing."""
    received = record.received
    return Acceptance(
        record.delivery_id,
        record.event,
        record.payload,
        record.source,
        record.work,
        record.lane,
        lambda accepted: None if accepted.duplicate else received,
    )


_WRITERS: weakref.WeakKeyDictionary[Database, IntakeWriter] = weakref.WeakKeyDictionary()
_WRITERS_LOCK = threading.Lock()


def writer_for(db: Database) -> IntakeWriter:
    """The acceptance writer of DB (one per ``Database`` object, made on first use)."""
    with _WRITERS_LOCK:
        writer = _WRITERS.get(db)
        if writer is None:
            writer = _WRITERS[db] = IntakeWriter(db)
        return writer
