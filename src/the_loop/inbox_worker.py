"""The daemon's inbox worker: drains the durable inbox through the engine and the services.

Ready items are claimed in arrival order and processed in lanes: deliveries that name the same
work item run one after another (in order), different items run in parallel. The lane key was
computed at intake and stored with the item (``dispatch.Intake.lane``); the worker never
decodes a payload. On start, items left ``processing`` by a crash are made ready again. Failed
items come back when their backoff expires; the worker also notices items another process
(``the-loop inbox replay``) made ready.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from the_loop import dispatch
from the_loop.context import Ctx
from the_loop.store import inbox
from the_loop.store.inbox import Claimed

IDLE_POLL_SECONDS = 1.0
MAX_LANES = 8


class InboxWorker:
    """Claims ready inbox items and processes them in per-item lanes."""

    def __init__(self, ctx: Ctx, max_lanes: int = MAX_LANES) -> None:
        self.ctx = ctx
        self.wake = ctx.inbox_wake
        self.lanes: dict[str, asyncio.Queue[Claimed]] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.slots = asyncio.Semaphore(max_lanes)

    async def run(self, stop: asyncio.Event) -> None:
        await asyncio.to_thread(inbox.recover, self.ctx.db)
        while not stop.is_set():
            claimed = await asyncio.to_thread(inbox.claim_next, self.ctx.db)
            if claimed is not None:
                self._enqueue(claimed)
                continue
            self.wake.clear()
            await self._sleep(stop)
        await self._drain()

    async def _sleep(self, stop: asyncio.Event) -> None:
        due = await asyncio.to_thread(inbox.next_due, self.ctx.db)
        delay = (
            IDLE_POLL_SECONDS
            if due is None
            else max(0.0, min(due - time.time(), IDLE_POLL_SECONDS))
        )
        waiters = [asyncio.create_task(self.wake.wait()), asyncio.create_task(stop.wait())]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait(waiters, timeout=delay, return_when=asyncio.FIRST_COMPLETED)
        for waiter in waiters:
            waiter.cancel()

    def _enqueue(self, claimed: Claimed) -> None:
        key = dispatch.lane(self.ctx, claimed)  # stored at intake; derived only for old rows
        queue = self.lanes.setdefault(key, asyncio.Queue())
        queue.put_nowait(claimed)
        task = self.tasks.get(key)
        if task is None or task.done():
            self.tasks[key] = asyncio.create_task(self._lane(key, queue), name=f"lane:{key}")

    async def _lane(self, key: str, queue: asyncio.Queue[Claimed]) -> None:
        async with self.slots:
            while not queue.empty():
                await asyncio.to_thread(dispatch.process, self.ctx, queue.get_nowait())
        if queue.empty() and self.lanes.get(key) is queue:
            del self.lanes[key]

    async def _drain(self) -> None:
        """Let in-flight deliveries finish (graceful shutdown)."""
        pending = [t for t in self.tasks.values() if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=30)


async def inbox_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    await InboxWorker(ctx).run(stop)
