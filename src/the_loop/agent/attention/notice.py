"""The attention pass: read the screens, apply answer timeouts, tell each session's requester
that its agent waits, and deliver what waited behind dialogs that are gone.

Whom a wait is told, and where, differs per kind of session: each registers it with
``on_notice`` (work-item sessions: a comment on the item, ``the_loop.work_items.notice``).
The daemon runs ``attention_loop``: a pass every ``attention.pollSeconds``, and one as soon as
a watched pane printed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from the_loop.agent import kinds
from the_loop.agent.attention.screen import ScreenDetector, detect_once
from the_loop.agent.model import AgentKind
from the_loop.context import Ctx
from the_loop.runner.tmux_watch import pane_watch
from the_loop.supervise import monitor, wait_or_stop

Notify = Callable[[Ctx], int]
"""A kind's notices: queue those that are due (where it tells its requester); how many."""

_NOTIFY: dict[AgentKind, Notify] = {}


def on_notice(kind: AgentKind, notify: Notify) -> None:
    """Register how sessions of KIND tell their requester that their agent waits."""
    _NOTIFY[kind] = notify


def notify_due(ctx: Ctx) -> int:
    """Queue every kind's notices that are due; how many."""
    kinds.load()
    return sum(notify(ctx) for notify in list(_NOTIFY.values()))


def attention_pass(ctx: Ctx, detector: ScreenDetector) -> None:
    """One pass: read the screens, apply answer timeouts, queue the notices that are due, and
    deliver what waited behind dialogs that are gone."""
    # lazy: the release loads both session policies; the read-only surfaces use this module
    from the_loop.agent.attention.service import apply_timeouts
    from the_loop.agent.core import release_held

    detect_once(ctx, detector)
    apply_timeouts(ctx)
    notify_due(ctx)
    release_held(ctx)


WAKE_GAP = 0.02
"""The least time between two passes woken by panes that printed (a busy pane wakes the
pass at most this often)."""


async def attention_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's attention task: a pass every ``attention.pollSeconds``, and one as soon as
    tmux says a watched pane printed (decision 0059), until STOP."""
    loop = asyncio.get_running_loop()
    printed = asyncio.Event()

    def wake() -> None:  # from the watch thread
        with contextlib.suppress(RuntimeError):  # the loop closed
            loop.call_soon_threadsafe(printed.set)

    watch = pane_watch(ctx.runners.tmux, wake)
    detector = ScreenDetector(watch=watch)
    progress = monitor(ctx, "attention")
    try:
        while not stop.is_set():
            printed.clear()
            await asyncio.to_thread(attention_pass, ctx, detector)
            progress.progressed()
            if await wait_or_stop(stop, WAKE_GAP):
                return
            await _first(stop, printed, ctx.config.attention.poll_seconds - WAKE_GAP)
    finally:
        watch.close()


async def _first(stop: asyncio.Event, printed: asyncio.Event, seconds: float) -> None:
    """Wait SECONDS, or until STOP or PRINTED is set."""
    waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(printed.wait())]
    try:
        await asyncio.wait(waits, timeout=max(seconds, 0.0), return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiting in waits:
            waiting.cancel()
