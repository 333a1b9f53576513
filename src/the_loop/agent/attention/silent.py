"""A turn that ended with no report (decision 0093).

A harness that reports its state through hooks (``signals: hooks``, Claude Code) is never read
from its screen while it works. But a person who interrupts a turn in the agent's terminal (Esc
in ``sessions attach`` or the browser terminal) ends it with no hook at all: Claude Code runs
no ``Stop`` for an interrupted turn. The session then read ``working`` until the agent's next
report, which an idle agent never sends, so nothing it waited for happened: no idle
suspension, no budget stop at the turn's end, and a person who looked saw an agent at work.

So an agent of this node recorded ``working`` that has not been heard of for
``SILENT_SECONDS`` has its pane read, and again every ``SILENT_SECONDS`` while that lasts. When
two reads in a row show its harness idle (the adapter's ``idle_pattern`` at the bottom of the
screen, Claude Code's input box with no "esc to interrupt" under it, and no dialog), it is
``waiting``. A turn still at work shows the harness's working footer, and is left as it is. The
pass looks at most every ``CHECK_SECONDS`` and asks the store once each time.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from the_loop.agent.attention.answer import DIALOG_END
from the_loop.agent.attention.screen import SCREEN_LINES, agents, tail_of
from the_loop.context import Ctx
from the_loop.harness import recorded_adapter
from the_loop.store import attention as store

SILENT_SECONDS = 30.0
"""How long an agent recorded ``working`` goes unheard of before its pane is read."""
CHECK_SECONDS = 10.0
"""The least time between two looks for such agents."""
AGAIN_SECONDS = 0.15
"""The second read, which must show the same (one read taken while the pane redraws decides
nothing)."""
RULE = (
    "no report for {seconds:g}s and the agent's input box is idle: its turn ended without a "
    "report (interrupted in its terminal, or while its node was away)"
)


@dataclass
class Silent:
    """When each agent's pane was last read for this (by agent key), and when to look next:
    at most every ``CHECK_SECONDS``, whatever wakes the pass."""

    read_at: dict[str, float] = field(default_factory=dict)
    next_at: float = 0.0
    working: bool = False
    """Whether the last look found such an agent at work (the pass is then due at
    ``next_at``; else only when something changes)."""


def look(ctx: Ctx, silent: Silent, now: float | None = None) -> float | None:
    """Read the panes of this node's hooks agents that have been ``working`` unheard of for
    ``SILENT_SECONDS`` (each at most once in that time) and record ``waiting`` for those whose
    harness shows idle. Returns when to look next (``time.time()``), None while no such agent
    is working."""
    now = time.time() if now is None else now
    if now < silent.next_at:
        return silent.next_at if silent.working else None
    silent.next_at = now + CHECK_SECONDS
    live = agents(ctx)
    patterns: dict[str, str | None] = {}
    for harness in {a.harness for a in live}:
        reports = ctx.config.attention_of(harness).signals == "hooks"
        adapter = recorded_adapter(ctx.config, harness) if reports else None
        patterns[harness] = None if adapter is None else adapter.idle_pattern
    hooks = {a.key: a for a in live if patterns[a.harness]}
    rows = store.rows(ctx.db.connect(), list(hooks)) if hooks else []
    working = [r for r in rows if r.state == store.WORKING]
    at_work = {r.agent for r in working}
    for key in [k for k in silent.read_at if k not in at_work]:
        del silent.read_at[key]
    silent.working = bool(working)
    if not working:
        return None
    for row in working:
        heard = max(row.updated_at, silent.read_at.get(row.agent, 0.0))
        if now - heard < SILENT_SECONDS:
            continue
        silent.read_at[row.agent] = now
        agent = hooks[row.agent]
        pattern = patterns[agent.harness]
        if pattern is not None and _idle(ctx, agent.target, pattern):
            _waiting(ctx, row)
    return silent.next_at


def _idle(ctx: Ctx, target: str, pattern: str) -> bool:
    """Whether two reads of TARGET's screen in a row show its harness idle."""
    for attempt in range(2):
        if attempt:
            time.sleep(AGAIN_SECONDS)
        capture = ctx.runners.tmux.capture(target, SCREEN_LINES)
        if not capture.ok:
            return False
        tail = tail_of(capture.text)
        if DIALOG_END in tail or re.search(pattern, tail) is None:
            return False
    return True


def _waiting(ctx: Ctx, seen: store.Row) -> None:
    """Record SEEN's agent ``waiting``, unless it was heard of since SEEN was read."""
    with ctx.db.transaction() as tx:
        row = store.get(tx, seen.agent)
        if row is None or row.state != store.WORKING or row.updated_at != seen.updated_at:
            return
        rule = RULE.format(seconds=SILENT_SECONDS)
        store.set_state(tx, seen.agent, store.WAITING, store.SCREEN_SIGNAL, rule, now=time.time())
