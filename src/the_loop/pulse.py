"""When the daemon's passes run: when something changed or a deadline falls due, never on a
fixed beat (SPEC §13: nothing is polled that did not change; decision 0066).

A pass (the attention pass, the spend pass) returns when it must run next with nothing
happening (``time.time()``: the next quiet rule, answer timeout, notice, idle suspend; soon
again while an agent works or a delivery failed; ``SAFETY_SECONDS`` at the latest). Between
passes it waits on a ``Pulse``:

- a **change**: a transaction of this process changed rows (``Database.on_commit``: a hook
  report applied, a message queued or held, a prompt opened or answered, a session started or
  ended, a config reload) — the pass runs again, no sooner than ``attention.pollSeconds``
  after the last one began (a burst of commits costs at most what the fixed beat did);
- an **urgent** poke (tmux said a watched pane printed): the pass runs at once;
- the **deadline** the last pass returned.

- a **write of another process** (the CLI woke a suspended agent, answered a prompt): on
  SQLite the WAL file's size and time change without a commit of this process; looked at every
  ``OUTSIDE_SECONDS`` (a ``stat``), it counts as a change. A look while a commit of this
  process is under way (its WAL written, its own stamp not yet recorded) waits for the next
  one, so a commit that wakes no pass (a node's heartbeat) is never taken for another
  process's. On PostgreSQL such a write is seen with its agent's pane output, on the next
  change of this process, or by the safety pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import time

from the_loop.store import Database

OUTSIDE_SECONDS = 1.0
"""How often a waiting pass looks whether another process wrote (one ``stat``)."""
SAFETY_SECONDS = 30.0
"""The longest a pass waits with nothing happening (what another process wrote, a lost
signal, is caught there)."""


class Pulse:
    """What wakes one background pass (see the module docstring); built in its event loop."""

    def __init__(self, db: Database) -> None:
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()
        self.urgent = asyncio.Event()
        self._forget = db.on_commit(self.change)
        self.db = db
        self._seen = db.wal_stamp()

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
        self._forget()

    def begin(self) -> float:
        """A pass begins: what happened before it is its to see; returns when (``time.time``)."""
        self.changed.clear()
        self.urgent.clear()
        return time.time()

    async def wait(self, stop: asyncio.Event, began: float, due: float, gap: float) -> bool:
        """Wait until DUE (``time.time()``), an urgent poke, or a change, with at least GAP
        seconds after BEGAN before a pass woken by a change or a deadline; True when STOP."""
        while not stop.is_set() and not self.urgent.is_set():
            at = min(due, began + SAFETY_SECONDS)
            if self.changed.is_set():
                at = min(at, began + gap)
            at = max(at, began + gap)
            delay = at - time.time()
            if delay <= 0:
                break
            quiet = () if self.changed.is_set() else (self.changed,)
            await first(min(delay, OUTSIDE_SECONDS), stop, self.urgent, *quiet)
            self._outside()
        return stop.is_set()

    def _outside(self) -> None:
        """A change when another process wrote since the last look (SQLite's WAL moved, and
        not by a commit of this process)."""
        found = self.db.stamps()
        if found is None:
            return  # a commit of this process is under way: judged at the next look
        stamp, own = found
        if stamp is None or stamp == self._seen:
            return
        self._seen = stamp
        if stamp != own:
            self.changed.set()


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
