"""The daemon's inbox worker: drains the durable inbox through the engine and the services.

Ready items are claimed in arrival order and processed in lanes: deliveries that name the same
work item run one after another (in order), different items run in parallel. The lane key was
computed at intake and stored with the item (``dispatch.Intake.lane``); the worker never
decodes a payload. On start, items left ``processing`` by a crash are made ready again (with
several nodes on one database: this node's own claims only; see ``the_loop.cluster.nodes``). Failed
items come back when their backoff expires; the worker also notices items another process
(``the-loop inbox replay``) made ready.

Faults never end the worker (SPEC §12): a database step that fails (locked past the busy
timeout, read-only, full) is retried with backoff while the worker reports itself stalled
through its ``TaskMonitor`` (``the_loop.supervise``; ``inbox`` for claiming, ``inbox-lanes``
for processing), and it resumes by itself. An item whose processing could not record its
outcome stays claimed and is processed again in its lane, as a retry, once the database
answers.

Between claims the worker waits on a ``Pulse`` (``the_loop.pulse``, decision 0066): an
acceptance wakes it at once (``Ctx.inbox_wake``); a commit of this process that did not
(a poll of GitHub's) and a write of another process (``inbox replay``) within
``pulse.CHANGE_GAP_SECONDS``; the next retry when it falls due. With nothing arriving it does
not run at all, but for the pulse's safety pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable
from typing import Literal, TypeVar

from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.intake import dispatch
from the_loop.pulse import CHANGE_GAP_SECONDS, Pulse
from the_loop.store import Database, inbox
from the_loop.store.inbox import Claimed
from the_loop.supervise import TRANSIENT, TaskMonitor, monitor

MAX_LANES = 8
T = TypeVar("T")


class InboxWorker:
    """Claims ready inbox items and processes them in per-item lanes."""

    def __init__(self, ctx: Ctx, max_lanes: int = MAX_LANES, name: str = "inbox") -> None:
        self.ctx = ctx
        self.wake = ctx.inbox_wake
        self.lanes: dict[str, asyncio.Queue[Claimed]] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self.slots = asyncio.Semaphore(max_lanes)
        self.monitor: TaskMonitor = monitor(ctx, name)
        self.lanes_monitor: TaskMonitor = monitor(ctx, f"{name}-lanes")
        self.stop: asyncio.Event | None = None

    async def run(self, stop: asyncio.Event) -> None:
        """Recover, then claim and process until STOP; faults are retried, never fatal."""
        self.stop = stop
        me = nodes.node_name(self.ctx)
        recover = functools.partial(inbox.recover, node=me if self.ctx.db.shared else None)
        claim = functools.partial(_claim_or_due, node=me)
        pulse = Pulse(self.ctx.db, urgent=self.wake, poll_unseen=True)
        try:
            while not stop.is_set() and await self._try(recover, stop) is False:
                pass
            while not stop.is_set():
                began = pulse.begin()  # before looking: a delivery committed meanwhile wakes it
                if not nodes.may_claim(self.ctx):  # its own heartbeat is stale: claim nothing
                    await pulse.wait(stop, began, began + CHANGE_GAP_SECONDS, CHANGE_GAP_SECONDS)
                    continue
                found = await self._try(claim, stop)
                if found is False:
                    continue
                if isinstance(found, Claimed):
                    self._enqueue(found)
                    continue
                due = float("inf") if found is None else found
                await pulse.wait(stop, began, due, CHANGE_GAP_SECONDS, due_gap=0.0)
        finally:
            pulse.close()
        await self._drain()

    async def _try(self, step: Callable[[Database], T], stop: asyncio.Event) -> T | Literal[False]:
        """Run one database STEP in a thread; on a fault report the stall, wait the backoff
        and answer False."""
        try:
            with self.monitor.step():
                found = await asyncio.to_thread(step, self.ctx.db)
        except TRANSIENT as exc:
            await _pause(stop, self.monitor.failed(exc))
            return False
        self.monitor.progressed()
        return found

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
                await self._process(queue.get_nowait())
        if queue.empty() and self.lanes.get(key) is queue:
            del self.lanes[key]

    async def _process(self, claimed: Claimed) -> None:
        """Process one claimed item; while its outcome cannot be recorded (a fault), try
        again after a backoff, as a retry of a failed attempt (the engine then decides it
        knowing an earlier try failed). Stops trying only when the daemon stops (the item
        stays claimed and the next start makes it ready again)."""
        while True:
            try:
                await asyncio.to_thread(dispatch.process, self.ctx, claimed)
            except TRANSIENT as exc:
                if await _pause(self.stop, self.lanes_monitor.failed(exc)):
                    return
                item = claimed.item.model_copy(update={"attempts": claimed.item.attempts + 1})
                claimed = claimed._replace(item=item)
                continue
            self.lanes_monitor.progressed()
            return

    async def _drain(self) -> None:
        """Let in-flight deliveries finish (graceful shutdown)."""
        pending = [t for t in self.tasks.values() if not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=30)


def _claim_or_due(db: Database, node: str) -> Claimed | float | None:
    """The oldest ready item, claimed; else when the next one is due (None: nothing waits).
    One trip to a thread for both: each trip is a hand-off of the GIL that an acknowledgement
    arriving meanwhile waits for (decision 0068)."""
    claimed = inbox.claim_next(db, node=node)
    return claimed if claimed is not None else inbox.next_due(db)


async def _pause(stop: asyncio.Event | None, seconds: float) -> bool:
    """Wait SECONDS, or until STOP is set; True when stopping."""
    if stop is None:
        await asyncio.sleep(seconds)
        return False
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)
    return stop.is_set()


async def inbox_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's inbox task (supervised as ``inbox``)."""
    await InboxWorker(ctx).run(stop)
