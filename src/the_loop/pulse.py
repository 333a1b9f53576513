"""When the daemon's background work runs: when something changed or a deadline falls due,
never on a fixed beat (SPEC §13: nothing is polled that did not change; decision 0066).

A pass (the attention pass, the spend pass, a drain of the inbox or the outbox, a checkpoint)
returns when it must run next with nothing happening (``time.time()``: the next quiet rule,
answer timeout, notice, idle suspend, retry; soon again while an agent works or a delivery
failed; ``SAFETY_SECONDS`` at the latest). Between passes it waits on a ``Pulse``:

- a **change**: a transaction of this process changed rows (``Database.on_commit``: a hook
  report applied, a message queued or held, a prompt opened or answered, a session started or
  ended, a config reload) — the pass runs again, no sooner than its *gap* after the last one
  began (a burst of commits costs at most one pass a gap);
- an **urgent** poke (tmux said a watched pane printed; a delivery, an outbox row was queued
  for this very pass): the pass runs at once;
- the **deadline** the last pass returned;
- a **write of another process** (the CLI woke a suspended agent, answered a prompt, replayed
  a delivery): on SQLite the WAL file's size and time change without a commit of this process;
  looked at every ``OUTSIDE_SECONDS`` (a ``stat``; one look for all the pulses of a database in
  an event loop, so a waiting pass does not wake to look), it counts as a change. A look while
  a commit of this process is under way (its WAL written, its own stamp not yet recorded)
  waits for the next one, so a commit that wakes no pass (a node's heartbeat) is never taken
  for another process's; nor does such a commit hide another process's write made just
  before it (the stamp it records covers both: ``Database.hid_a_write`` says so, and the
  look counts it). On PostgreSQL such a write cannot be seen: a pulse built with
  ``poll_unseen`` (a queue that other processes and nodes fill: the inbox, the outbox, Slack's
  posts) then counts every look as a change, which is the poll it always was there; the other
  passes see it with their agent's pane output, on the next change of this process, or by the
  safety pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time

from the_loop.store import Database

OUTSIDE_SECONDS = 1.0
"""How often a waiting pass looks whether another process wrote (one ``stat``)."""
CHANGE_GAP_SECONDS = 1.0
"""The gap a queue's task (the inbox, the outbox, Slack's posts) leaves after a pass before a
commit that did not wake it, or another process's write, runs it again: the bound its idle
poll of once a second gave."""
SAFETY_SECONDS = 30.0
"""The longest a pass waits with nothing happening (what another process wrote, a lost
signal, is caught there)."""


class Pulse:
    """What wakes one background pass (see the module docstring); built in its event loop.

    URGENT is the event that runs the pass at once (a queue's own wake), a new one by default;
    POLL_UNSEEN: on a database where other processes' writes cannot be seen, every look counts
    as one."""

    def __init__(
        self, db: Database, *, urgent: asyncio.Event | None = None, poll_unseen: bool = False
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()
        self.urgent = asyncio.Event() if urgent is None else urgent
        self.poll_unseen = poll_unseen
        self._forget = db.on_commit(self.change)
        self._looker = _Looker.join(db, self)

    def change(self) -> None:
        """Something the pass may react to was committed; any thread."""
        self._set(self.changed)

    def poke(self) -> None:
        """Run the pass at once (a pane printed); any thread."""
        self._set(self.urgent)

    def _set(self, event: asyncio.Event) -> None:
        if event.is_set():
            # nothing to wake: the pass has not begun since it was set, and when it begins it
            # reads what was committed before this call (a commit of every acceptance would
            # otherwise wake the event loop once per pass)
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(event.set)

    def close(self) -> None:
        """Stop listening (in the pulse's event loop)."""
        self._forget()
        self._looker.leave(self)

    def begin(self) -> float:
        """A pass begins: what happened before it is its to see; returns when (``time.time``)."""
        self.changed.clear()
        self.urgent.clear()
        return time.time()

    async def wait(
        self,
        stop: asyncio.Event,
        began: float,
        due: float,
        gap: float,
        *,
        due_gap: float | None = None,
    ) -> bool:
        """Wait until DUE (``time.time()``), an urgent poke, or a change, with at least GAP
        seconds after BEGAN before a pass woken by a change, and DUE_GAP (GAP by default)
        before one woken by the deadline; True when STOP."""
        due_gap = gap if due_gap is None else due_gap
        while not stop.is_set() and not self.urgent.is_set():
            at = max(min(due, began + SAFETY_SECONDS), began + due_gap)
            if self.changed.is_set():
                at = min(at, max(began + gap, time.time()))
            delay = at - time.time()
            if delay <= 0:
                break
            quiet = () if self.changed.is_set() else (self.changed,)
            await first(delay, stop, self.urgent, *quiet)
        return stop.is_set()


class _Looker:
    """The look at whether another process wrote, once every ``OUTSIDE_SECONDS`` for all the
    pulses of one database in one event loop (a task that lives while they do)."""

    _all: dict[tuple[Database, asyncio.AbstractEventLoop], _Looker] = {}
    _lock = threading.Lock()

    def __init__(self, db: Database, loop: asyncio.AbstractEventLoop) -> None:
        self.db = db
        self.loop = loop
        self.pulses: set[Pulse] = set()
        self._seen = db.wal_stamp()
        self._task = loop.create_task(self._run(), name="pulse-looker")

    @classmethod
    def join(cls, db: Database, pulse: Pulse) -> _Looker:
        with cls._lock:
            looker = cls._all.get((db, pulse.loop))
            if looker is None:
                looker = cls._all[(db, pulse.loop)] = _Looker(db, pulse.loop)
            looker.pulses.add(pulse)
            return looker

    def leave(self, pulse: Pulse) -> None:
        with self._lock:
            self.pulses.discard(pulse)
            if self.pulses:
                return
            del self._all[(self.db, self.loop)]
        self._task.cancel()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(OUTSIDE_SECONDS)
            if self._seen is None:  # cannot be seen: the pulses that poll take every look
                woken = [p for p in self.pulses if p.poll_unseen]
            else:
                woken = list(self.pulses) if self._written() else []
            for pulse in woken:
                pulse.changed.set()

    def _written(self) -> bool:
        """Whether another process wrote since the last look (SQLite's WAL moved, and not by
        a commit of this process)."""
        found = self.db.stamps()
        if found is None:
            return False  # a commit of this process is under way: judged at the next look
        stamp, own = found
        if self.db.hid_a_write:  # a heartbeat's stamp covers another process's write
            self.db.hid_a_write = False
            self._seen = stamp
            return True
        if stamp is None or stamp == self._seen:
            return False
        self._seen = stamp
        return stamp != own


async def first(seconds: float, *events: asyncio.Event) -> None:
    """Wait SECONDS, or until one of EVENTS is set."""
    waits = [asyncio.ensure_future(e.wait()) for e in events]
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()


def soonest(*times: float | None) -> float:
    """The earliest of TIMES that is not None (``inf`` when none is)."""
    return min((t for t in times if t is not None), default=float("inf"))
