"""Supervised background tasks: they survive faults, say when they cannot make progress, and
resume by themselves (SPEC §9, §12; decision 0015).

Every background task of the daemon runs under ``supervised``:

- a **fault** of the environment (``TRANSIENT``: the database locked, read-only, full or
  failing, an ``OSError`` such as ENOSPC or EROFS) marks the task *stalled*, emits one
  ``task.stalled`` and restarts the task after a backoff (doubling from
  ``BACKOFF_BASE_SECONDS``, at most ``MAX_BACKOFF_SECONDS``, ±25%; ``the_loop.backoff``);
- any other exception is a **bug**: the task is marked *crashed*, its traceback is logged, one
  ``task.crashed`` is emitted and it is restarted the same way;
- returning ends the task (when STOP is set, or a task that runs once).

A task whose steps must not be interrupted (the inbox worker: its lanes keep running) handles
its faults itself, step by step, through its ``TaskMonitor``: ``failed(exc)`` marks it stalled
and returns the delay before the next try, ``progressed()`` marks it running again (one
``task.recovered``), and ``step()`` brackets one database step so that a step blocked longer
than ``STUCK_SECONDS`` (another process holding the write lock: SQLite's busy handler waits
up to its timeout) counts as stalled before it fails.

Task states live in memory, in the ``TaskBoard`` of the database the tasks serve
(``board_for``), so the health endpoint reads them without touching SQLite. Events are written
best-effort from a worker thread: when the database is down, writing ``task.stalled`` fails
too, and that failure is swallowed (the state is still reported by health, status, metrics).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Literal

from the_loop import events as ev
from the_loop.backoff import Backoff
from the_loop.context import Ctx
from the_loop.errors import StateError
from the_loop.store import Database
from the_loop.wire import Timestamp, Wire, iso_now

SOURCE = "daemon"
BACKOFF_BASE_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 30.0
STUCK_SECONDS = 5.0
TRANSIENT: tuple[type[BaseException], ...] = (StateError, sqlite3.Error, OSError)
"""Faults of the environment: retried with backoff, reported as a stall."""

log = logging.getLogger("the_loop.tasks")

TaskFn = Callable[[Ctx, asyncio.Event], Coroutine[Any, Any, None]]
State = Literal["running", "stalled", "crashed", "finished"]


class TaskState(Wire):
    """What health reports for one task: its state, since when, and the last error."""

    name: str
    state: State = "running"
    since: Timestamp = 0.0
    error: str | None = None
    failures: int = 0
    restarts: int = 0
    passes: int = 0
    """Steps (passes) completed since the process started: what idle costs, counted."""


class TaskMonitor:
    """The state of one supervised task, changed from the event loop, read from any thread."""

    def __init__(self, board: TaskBoard, name: str) -> None:
        self.board = board
        self.state = TaskState(name=name, since=time.time())
        self._step_since: float | None = None

    @property
    def name(self) -> str:
        return self.state.name

    def failed(self, exc: BaseException, crashed: bool = False) -> float:
        """Record a failed step (a fault, or a bug when CRASHED); the delay before the next
        try. Emits ``task.stalled``/``task.crashed`` when the task was running."""
        state = self.state
        state.failures += 1
        error = f"{type(exc).__name__}: {exc}" if crashed else (str(exc) or type(exc).__name__)
        delay = Backoff(BACKOFF_BASE_SECONDS, MAX_BACKOFF_SECONDS).delay(state.failures)
        was: State = state.state
        state.state = "crashed" if crashed else "stalled"
        state.error = error[:500]
        if was in ("running", "finished"):
            state.since = time.time()
            kind = "task.crashed" if crashed else "task.stalled"
            self.board.emit(kind, task=self.name, error=state.error, retry_in=round(delay, 2))
        return delay

    def progressed(self) -> None:
        """A step succeeded: running again (one ``task.recovered`` after a stall or crash)."""
        state = self.state
        if state.state in ("stalled", "crashed"):
            self.board.emit("task.recovered", task=self.name, failures=state.failures)
            state.since = time.time()
        state.state, state.error, state.failures = "running", None, 0
        state.passes += 1

    def finished(self) -> None:
        self.state.state, self.state.since = "finished", time.time()

    @contextlib.contextmanager
    def step(self) -> Iterator[None]:
        """Bracket one database step: while it runs longer than ``STUCK_SECONDS`` the task
        reports itself stalled."""
        self._step_since = time.monotonic()
        try:
            yield
        finally:
            self._step_since = None

    def snapshot(self) -> TaskState:
        """The state as health reports it (a step blocked too long is a stall)."""
        found = self.state.model_copy()
        since = self._step_since
        if found.state == "running" and since is not None:
            blocked = time.monotonic() - since
            if blocked > STUCK_SECONDS:
                found.state = "stalled"
                found.error = f"a step has waited {blocked:.0f}s (is the database locked?)"
        return found


BACKLOG = 100
"""Events kept for a later write while the database cannot take them (oldest dropped first)."""


class TaskBoard:
    """The monitors of one database's background tasks, and its best-effort event writer."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.monitors: dict[str, TaskMonitor] = {}
        self.integrity: list[str] = []
        self._pending: set[asyncio.Task[None]] = set()
        self._lock = threading.Lock()
        self._unwritten: list[tuple[str, dict[str, Any]]] = []
        self._write_lock = threading.Lock()

    def monitor(self, name: str) -> TaskMonitor:
        """The monitor of task NAME (created on first use)."""
        with self._lock:
            found = self.monitors.get(name)
            if found is None:
                found = self.monitors[name] = TaskMonitor(self, name)
            return found

    def snapshot(self) -> list[TaskState]:
        with self._lock:
            monitors = list(self.monitors.values())
        return [m.snapshot() for m in monitors]

    def problems(self) -> list[str]:
        """One line per task that cannot make progress, and each integrity problem."""
        found = [
            f"background task {s.name} is {s.state}: {s.error}"
            for s in self.snapshot()
            if s.state in ("stalled", "crashed")
        ]
        return found + [f"the state database is damaged: {p}" for p in self.integrity]

    def emit(self, type: str, **payload: Any) -> None:
        """Write event TYPE from a worker thread; a failure to write it is swallowed (the
        database may be the very thing that is down). Outside an event loop: synchronous."""

        with self._lock:
            self._unwritten.append((type, {**payload, "occurredAt": iso_now()}))
            del self._unwritten[:-BACKLOG]

        def write() -> None:
            self._write_backlog()

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            write()
            return
        task = loop.create_task(asyncio.to_thread(write))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _write_backlog(self) -> None:
        """Write the events not yet written, oldest first; stop (keeping the rest for the next
        try) at the first that cannot be written."""
        with self._write_lock:
            while True:
                with self._lock:
                    if not self._unwritten:
                        return
                    item = self._unwritten[0]
                try:
                    ev.emit(self.db, item[0], source=SOURCE, **item[1])
                except TRANSIENT:
                    return
                with self._lock:
                    if self._unwritten and self._unwritten[0] is item:
                        self._unwritten.pop(0)


def task_metric_lines(states: list[TaskState]) -> list[str]:
    """Prometheus lines: 1 for each task that cannot make progress, 0 otherwise, and its
    consecutive failures."""
    lines = [
        "# HELP the_loop_task_stalled 1 while a background task cannot make progress.",
        "# TYPE the_loop_task_stalled gauge",
    ]
    lines += [
        f'the_loop_task_stalled{{task="{s.name}"}} {int(s.state in ("stalled", "crashed"))}'
        for s in states
    ]
    lines += ["# TYPE the_loop_task_failures gauge"]
    lines += [f'the_loop_task_failures{{task="{s.name}"}} {s.failures}' for s in states]
    lines += ["# TYPE the_loop_task_passes_total counter"]
    lines += [f'the_loop_task_passes_total{{task="{s.name}"}} {s.passes}' for s in states]
    return lines


_BOARDS: weakref.WeakKeyDictionary[Database, TaskBoard] = weakref.WeakKeyDictionary()
_BOARDS_LOCK = threading.Lock()


def board_for(db: Database) -> TaskBoard:
    """The task board of DB in this process (created on first use)."""
    with _BOARDS_LOCK:
        board = _BOARDS.get(db)
        if board is None:
            board = _BOARDS[db] = TaskBoard(db)
        return board


def monitor(ctx: Ctx, name: str) -> TaskMonitor:
    """The monitor of CTX's background task NAME."""
    return board_for(ctx.db).monitor(name)


async def wait_or_stop(stop: asyncio.Event, seconds: float) -> bool:
    """Wait SECONDS or until STOP; True when stopping."""
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    return stop.is_set()


async def periodic(
    ctx: Ctx,
    stop: asyncio.Event,
    name: str,
    step: Callable[[], object],
    seconds: Callable[[], float],
) -> None:
    """Run STEP in a worker thread, report progress to task NAME's monitor, then wait
    ``SECONDS()`` (read anew each time, so a config reload applies) or until STOP."""
    watch = monitor(ctx, name)
    while True:
        await asyncio.to_thread(step)
        watch.progressed()
        if await wait_or_stop(stop, seconds()):
            return


async def supervised(name: str, fn: TaskFn, ctx: Ctx, stop: asyncio.Event) -> None:
    """Run FN(CTX, STOP) until it returns, restarting it after a fault or a bug (with
    backoff) until STOP is set; see the module docstring."""
    mon = monitor(ctx, name)
    while not stop.is_set():
        try:
            await fn(ctx, stop)
        except TRANSIENT as exc:
            delay = mon.failed(exc)
            log.warning("background task %s stalled (retry in %.1fs): %s", name, delay, exc)
        except Exception as exc:  # the supervision edge: a bug restarts the task, reported
            delay = mon.failed(exc, crashed=True)
            log.exception("background task %s crashed (restart in %.1fs)", name, delay)
        else:
            if mon.state.state != "running":
                mon.progressed()
            mon.finished()
            return
        mon.state.restarts += 1
        if await wait_or_stop(stop, delay):
            return
