"""The daemon's health and the status summary, as every surface reports them.

``health`` runs the health checks (background tasks, standing sessions, poller, inbox,
outbox) into the one ``Health`` model (``the_loop.views.health``); ``status_now`` wraps it in the
one ``StatusReport`` with the daemon's identity, the sessions by status and the inbox depth.
Figures in ``detail`` are already in the output contract (``the_loop.wire``).

``health_now`` is what the daemon's endpoints answer: it never waits for the database longer
than ``DB_ANSWER_SECONDS``. The background tasks' states come from memory (``TaskBoard``); the
checks that read the database run in a thread of their own (never the shared pool, which a
stalled database can fill), and when they do not answer in time the answer is unhealthy,
saying so, with the task states it has. A check that fails on a database error is a problem,
not an exception.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from the_loop import __version__
from the_loop.agent.spend import admission
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import StateError
from the_loop.instance import DaemonInfo, daemon_running, read_info
from the_loop.outbox import drain as outbox
from the_loop.standing import service as standing
from the_loop.store import inbox
from the_loop.store.db import file_health
from the_loop.store.poll import last_cycle
from the_loop.supervise import board_for
from the_loop.views.counts import by_status
from the_loop.views.health import Health, StatusReport
from the_loop.work_items import workspace

DB_ANSWER_SECONDS = 0.5
"""Half a second: a liveness probe's usual one-second limit still holds, and a busy 2-core host
(a tmux fork for the standing check, the GIL shared with start-up work) answers in time."""


HealthCheck = Callable[[Ctx], tuple[list[str], Any]]


def _standing_health(ctx: Ctx) -> tuple[list[str], Any]:
    views = standing.list_standing(ctx)
    return standing.health_problems(ctx), {v.name: v.status for v in views}


def _poller_health(ctx: Ctx) -> tuple[list[str], Any]:
    if not (ctx.config.github.enabled and ctx.config.github.poller.enabled):
        return [], None
    cycle = last_cycle(ctx.db)
    return [], cycle.model_dump(mode="json", by_alias=True) if cycle else {"lastCycle": None}


def _inbox_health(ctx: Ctx) -> tuple[list[str], Any]:
    return [], inbox.counts(ctx.db)


def _outbox_health(ctx: Ctx) -> tuple[list[str], Any]:
    return [], outbox.summary(ctx).model_dump(mode="json", by_alias=True)


def _config_health(ctx: Ctx) -> tuple[list[str], Any]:
    """The restart-only settings the loaded config changed (a note, not a problem)."""
    return [], {"restartNeeded": list(ctx.restart_needed)} if ctx.restart_needed else None


def _file_health(ctx: Ctx) -> tuple[list[str], Any]:
    return file_health(ctx.db)


HEALTH_CHECKS: list[tuple[str, HealthCheck]] = [
    ("database", _file_health),
    ("config", _config_health),
    ("standing", _standing_health),
    ("poller", _poller_health),
    ("inbox", _inbox_health),
    ("outbox", _outbox_health),
    ("nodes", nodes.health),
]
"""Each check returns (problems, figures); empty figures are left out of ``detail``."""


def _tasks_health(ctx: Ctx) -> tuple[list[str], Any]:
    """The problems of this process's background tasks, and the state of each task that has
    one (healthy tasks are left out: a healthy answer reads the same from every process)."""
    board = board_for(ctx.db)
    states = {
        s.name: s.model_dump(mode="json", by_alias=True, exclude={"name"})
        for s in board.snapshot()
        if s.state in ("stalled", "crashed")
    }
    return board.problems(), states


def health(ctx: Ctx) -> Health:
    """The health of the installation CTX serves: ok unless a check reports a problem (a
    check the database fails is a problem naming the error). Blocking: it reads the database."""
    problems, detail = _run(ctx, [("tasks", _tasks_health), *HEALTH_CHECKS])
    return _verdict(problems, detail)


def _run(ctx: Ctx, checks: list[tuple[str, HealthCheck]]) -> tuple[list[str], dict[str, Any]]:
    problems: list[str] = []
    detail: dict[str, Any] = {}
    for name, check in checks:
        try:
            found, info = check(ctx)
        except (StateError, sqlite3.Error) as exc:
            found, info = [f"{name}: the state database fails: {exc}"], None
        problems += found
        if info:
            detail[name] = info
    return problems, detail


def _verdict(problems: list[str], detail: dict[str, Any]) -> Health:
    return Health(
        status="ok" if not problems else "unhealthy",
        version=__version__,
        problems=problems,
        detail=detail,
    )


Checks = tuple[list[str], dict[str, Any]]
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="health")
_INFLIGHT: dict[int, Future[Checks]] = {}
_INFLIGHT_LOCK = threading.Lock()


async def health_now(ctx: Ctx, wait: float = DB_ANSWER_SECONDS) -> Health:
    """``health`` for the endpoints: answers within about WAIT seconds whatever the database
    does (see the module docstring). Concurrent callers share one database read."""
    problems, detail = _tasks_health(ctx)
    future = shared(id(ctx.db), lambda: _run(ctx, HEALTH_CHECKS))
    try:
        found, info = await asyncio.wait_for(asyncio.shield(asyncio.wrap_future(future)), wait)
    except TimeoutError:
        problems.append(f"the state database did not answer within {wait * 1000:.0f} ms")
        return _verdict(problems, {"tasks": detail} if detail else {})
    merged = {"tasks": detail, **info} if detail else info
    return _verdict(problems + found, merged)


def shared(key: int, run: Callable[[], Checks]) -> Future[Checks]:
    """The health pass in flight for KEY, else RUN started in the health thread: concurrent
    callers share one pass, and the next caller after it ends starts a new one."""
    with _INFLIGHT_LOCK:
        future = _INFLIGHT.get(key)
        if future is not None:
            return future
        future = _INFLIGHT[key] = _EXECUTOR.submit(run)
    # Outside the lock: on a future already done, the callback runs at once in this thread,
    # and it takes the lock (registered inside it, that deadlocked the event loop).
    future.add_done_callback(lambda done: _forget(key, done))
    return future


def _forget(key: int, done: Future[Checks]) -> None:
    with _INFLIGHT_LOCK:
        if _INFLIGHT.get(key) is done:
            del _INFLIGHT[key]


async def status_now(ctx: Ctx) -> StatusReport:
    """What ``GET /api/v1/status`` answers (and so ``the-loop status``): the daemon of CTX's
    state dir (the serving process itself, or none when CTX is mounted in a caller's app and
    no daemon runs), ``health_now``, sessions by status and inbox depth."""
    found = await health_now(ctx)
    sessions, in_inbox, info = await asyncio.to_thread(_read, ctx)
    memory = await asyncio.to_thread(admission.report, ctx)
    waiting = await asyncio.to_thread(_waiting, ctx)
    worktrees = workspace.disk_usage(ctx.config)  # cached; measured in a thread of its own
    return StatusReport(
        running=info is not None,
        healthy=info is not None and found.ok,
        pid=info.pid if info else None,
        url=info.url if info else None,
        version=info.version if info else None,
        started_at=info.started_at if info else None,
        config_path=info.config_path if info else None,
        health=found,
        sessions=sessions,
        attention=waiting,
        inbox=in_inbox,
        memory=memory,
        worktrees=worktrees,
    )


def _read(ctx: Ctx) -> tuple[dict[str, int], dict[str, int], DaemonInfo | None]:
    """Sessions and inbox by status, and the running daemon's info (None: none runs)."""
    info = read_info(ctx.state_dir)
    running = info if info is not None and daemon_running(ctx.state_dir) else None
    sessions, in_inbox = counts(ctx)
    return sessions, in_inbox, running


def _waiting(ctx: Ctx) -> dict[str, int]:
    """The live sessions waiting on a person, by attention state (blocked ones included)."""
    # lazy: the attention views load the session stores; status without a database skips it
    from the_loop.agent.attention.service import waiting_counts

    try:
        return waiting_counts(ctx)
    except (StateError, sqlite3.Error):
        return {}


def counts(ctx: Ctx) -> tuple[dict[str, int], dict[str, int]]:
    """Sessions and inbox items by status; empty when the database fails (the health's
    checks say why)."""
    try:
        return by_status(ctx)
    except (StateError, sqlite3.Error):
        return {}, {}
