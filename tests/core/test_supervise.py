"""Supervised background tasks (decision 0015): a fault or a bug never ends a task for good;
its state is reported meanwhile, and one event marks each stall, crash and recovery."""

from __future__ import annotations

import asyncio
import errno
import sqlite3
from pathlib import Path

import pytest

from tests.helpers import await_until
from the_loop import events as ev
from the_loop import supervise
from the_loop.config import load_config
from the_loop.context import Ctx
from the_loop.store import open_database
from the_loop.store.db import SqliteDatabase
from the_loop.views.status import health, health_now


def _ctx(tmp_path: Path) -> Ctx:
    config = tmp_path / "the-loop.yaml"
    config.write_text(f"stateDir: {tmp_path / 'state'}\n")
    loaded = load_config(config)
    return Ctx(loaded=loaded, db=open_database(loaded.config.state_path))


@pytest.fixture(autouse=True)
def quick_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(supervise, "BACKOFF_BASE_SECONDS", 0.01)


def _recorded(ctx: Ctx, kind: str) -> bool:
    return bool(ev.query(ctx.db, ev.EventFilter(types=(kind,))))


@pytest.mark.parametrize(
    ("fault", "crashed"),
    [
        (sqlite3.OperationalError("database is locked"), False),
        (OSError(errno.EROFS, "Read-only file system"), False),
        (OSError(errno.ENOSPC, "No space left on device"), False),
        (sqlite3.OperationalError("attempt to write a readonly database"), False),
        (KeyError("a bug"), True),
    ],
)
def test_a_failing_task_is_restarted_reported_and_recovers(
    tmp_path: Path, fault: BaseException, crashed: bool
) -> None:
    ctx = _ctx(tmp_path)
    runs: list[int] = []
    release = asyncio.Event()

    async def task(c: Ctx, stop: asyncio.Event) -> None:
        runs.append(1)
        if len(runs) <= 3:
            raise fault
        await release.wait()
        supervise.monitor(c, "t").progressed()
        await stop.wait()

    async def scenario() -> None:
        stop = asyncio.Event()
        runner = asyncio.create_task(supervise.supervised("t", task, ctx, stop))
        await await_until(lambda: _async(len(runs) >= 4), what="three restarts")
        state = supervise.monitor(ctx, "t").snapshot()
        assert state.state == ("crashed" if crashed else "stalled")
        assert state.restarts == 3 and state.failures == 3
        unhealthy = await health_now(ctx, wait=10.0)
        assert not unhealthy.ok
        assert any("background task t is" in p for p in unhealthy.problems)
        release.set()
        await await_until(lambda: _async(supervise.monitor(ctx, "t").state.state == "running"))
        assert (await health_now(ctx, wait=10.0)).ok
        # its event is written on a worker thread: wait for it before the loop ends
        await await_until(lambda: _async(_recorded(ctx, "task.recovered")), what="recovered")
        stop.set()
        await asyncio.wait_for(runner, 5)
        await asyncio.sleep(0)

    asyncio.run(scenario())
    kind = "task.crashed" if crashed else "task.stalled"
    found = [
        e.type
        for e in ev.query(
            ctx.db, ev.EventFilter(types=("task.stalled", "task.crashed", "task.recovered"))
        )
    ]
    assert found.count(kind) == 1, found
    assert found.count("task.recovered") == 1, found
    assert health(ctx).ok


def test_a_stall_is_reported_even_when_its_event_cannot_be_written(tmp_path: Path) -> None:
    board = supervise.TaskBoard(SqliteDatabase(tmp_path / "missing" / "the-loop.db"))
    mon = board.monitor("x")
    assert mon.failed(sqlite3.OperationalError("disk I/O error")) > 0  # the emit failed
    assert mon.snapshot().state == "stalled"
    assert board.problems() == ["background task x is stalled: disk I/O error"]
    mon.progressed()
    assert board.problems() == []


def test_a_step_blocked_too_long_counts_as_stalled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = _ctx(tmp_path)
    monkeypatch.setattr(supervise, "STUCK_SECONDS", 0.0)
    mon = supervise.monitor(ctx, "y")
    with mon.step():
        assert mon.snapshot().state == "stalled"
        assert "waited" in (mon.snapshot().error or "")
    assert mon.snapshot().state == "running"


def test_a_damaged_database_is_unhealthy(tmp_path: Path) -> None:
    from the_loop.store.integrity import quick_check

    ctx = _ctx(tmp_path)
    assert quick_check(ctx.db) == []
    supervise.board_for(ctx.db).integrity = ["row 3 missing from index x"]
    found = health(ctx)
    assert not found.ok
    assert "the state database is damaged: row 3 missing from index x" in found.problems


async def _async(value: bool) -> bool:
    return value
