"""The attention pass: read the screens, apply answer timeouts, tell each session's requester
that its agent waits, and deliver what waited behind dialogs that are gone.

Whom a wait is told, and where, differs per kind of session: each registers it with
``on_notice`` (work-item sessions: a comment on the item, ``the_loop.work_items.notice``).
The daemon runs ``attention_loop``: the screen detector, then the notices, when something
changed or a deadline falls due (``the_loop.pulse``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from the_loop.agent import kinds
from the_loop.agent.attention import silent as silent_turns
from the_loop.agent.attention.screen import ScreenDetector, detect_once
from the_loop.agent.model import AgentKind
from the_loop.context import Ctx
from the_loop.pulse import Pulse, soonest
from the_loop.runner.tmux_watch import pane_watch
from the_loop.store import attention as store
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


def next_notice(ctx: Ctx) -> float | None:
    """When ``notify_due`` has a notice to queue next (``time.time()``); None: not until a
    prompt opens (a follow-up is queued by the pass after its prompt closed)."""
    if not ctx.config.github.enabled:
        return None
    opened = store.oldest_open(ctx.db.connect(), unnoticed=True)
    return None if opened is None else opened + ctx.config.attention.notify_after_seconds


def attention_pass(ctx: Ctx, detector: ScreenDetector, silent: silent_turns.Silent) -> float:
    """One pass: read the screens (and the panes of agents at work unheard of for a while),
    apply answer timeouts, queue the notices that are due, and deliver what waited behind
    dialogs (or drafts) that are gone. Returns when the next pass is due with nothing happening
    (``time.time()``; ``the_loop.pulse``)."""
    # lazy: the release loads both session policies; the read-only surfaces use this module
    from the_loop.agent.attention.service import apply_timeouts, next_timeout
    from the_loop.agent.core import DRAFT_LOOK_SECONDS, release_held

    now = time.time()
    detect_once(ctx, detector, now)
    unheard = silent_turns.look(ctx, silent, now)
    apply_timeouts(ctx)
    notify_due(ctx)
    failed = release_held(ctx)
    retry = now if failed else None  # a delivery that failed is tried again soon
    if retry is None and ctx.drafts:  # held behind a draft: is it gone?
        retry = now + DRAFT_LOOK_SECONDS
    return soonest(detector.due, unheard, next_timeout(ctx), next_notice(ctx), retry)


WAKE_GAP = 0.02
"""The least time between two passes woken by panes that printed (a busy pane wakes the
pass at most this often)."""


async def attention_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's attention task: a pass as soon as tmux says a watched pane printed
    (decision 0059), after a change of this process (at most every ``attention.pollSeconds``)
    and when the last pass said (decision 0066), until STOP."""
    pulse = Pulse(ctx.db)
    loop = asyncio.get_running_loop()

    def died() -> None:  # from the watch thread: the reconciler looks now
        with contextlib.suppress(RuntimeError):  # the loop closed
            loop.call_soon_threadsafe(ctx.panes_died.set)

    watch = pane_watch(ctx.runners.tmux, pulse.poke, died)
    detector = ScreenDetector(watch=watch)
    silent = silent_turns.Silent()
    progress = monitor(ctx, "attention")
    try:
        while not stop.is_set():
            began = pulse.begin()
            due = await asyncio.to_thread(attention_pass, ctx, detector, silent)
            progress.progressed()
            if await wait_or_stop(stop, WAKE_GAP):
                return
            if await pulse.wait(stop, began, due, ctx.config.attention.poll_seconds):
                return
    finally:
        watch.close()
        pulse.close()
