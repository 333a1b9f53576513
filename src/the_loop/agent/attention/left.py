"""A dialog answered in the agent's own terminal (SPEC §15 "Prompt identity": a prompt keeps its
identity until the pane no longer shows that dialog; decision 0091).

Claude Code draws its permission (or question) dialog while the-loop's ``PermissionRequest``
hook waits for a decision. A person at the agent's terminal (``sessions attach``, the browser
terminal) may answer that dialog there, or dismiss it with Esc; Claude Code then ends the hook,
and no hook tells what followed: the tool runs and the turn goes on, or, dismissed, Claude Code
waits for input ("Interrupted · What should Claude do instead?") with no report at all. The
session needed a permission, and its messages stayed held, until someone typed in that terminal.

So when the last hook waiting on a prompt leaves without a decision (``agent.attention.channel``),
or none came back for it after the daemon restarted, ``look`` reads the agent's pane for up to
``LOOK_SECONDS`` (from ``DRAWN_SECONDS`` after the prompt opened: Claude Code draws its dialog
a moment after it reports it). Once two reads in a row show the dialog gone, the prompt is closed
(``moved-on``), and what was held behind it is delivered into the input box. The dialog is gone
when the harness's input box (its ``ready_pattern``) shows at the bottom of the screen, with no
dialog. The agent is then ``waiting`` when one of the harness's ``waitingPatterns`` shows the
dialog was dismissed (Claude Code: "Interrupted" right over its input box), else ``working``: a
yes runs the tool, for as long as it takes, and a wrong ``waiting`` could let idle suspension
stop it. A screen that still shows the dialog (the hook died; Claude Code's own dialog waits in
the terminal), or no input box, leaves the prompt as it is; the channel looks again, briefly,
every second, until it is answered there. Either way the look ends with ``hook.left``.

Only for harnesses whose attention comes from hooks (``signals: hooks``); blocking (the channel
runs it in a worker thread).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from the_loop import events as ev
from the_loop.agent.attention.answer import DIALOG_END, pane_of
from the_loop.agent.attention.screen import SCREEN_LINES, tail_of
from the_loop.context import Ctx
from the_loop.errors import Conflict
from the_loop.harness import recorded_adapter
from the_loop.store import attention as store

LOOK_SECONDS = 5.0
"""How long the pane is read after the hook left for the dialog to be gone (Claude Code redraws
its input box at once; a busy host may take a moment)."""
LOOK_GAP = 0.1
RECHECK_SECONDS = 0.15
"""A look again at a dialog that still showed (two reads): see ``agent.attention.channel``."""
GONE = "gone"
SHOWN = "shown"
DRAWN_SECONDS = 2.0
"""Nothing is read before the prompt is this old: Claude Code reports its dialog about 0.5 s
before it draws it, and until then its screen shows the input box, which would read as the
dialog gone (a hook that died in that moment)."""
SIGNAL = "claude-hook:PermissionRequest"
RULES = {
    store.WORKING: (
        "the dialog was answered in the agent's terminal: its hook left without a decision "
        "and the input box shows"
    ),
    store.WAITING: (
        "the dialog was dismissed in the agent's terminal: its hook left without a decision "
        "and the agent waits for input"
    ),
}


def look(
    ctx: Ctx,
    prompt_id: str,
    left: Callable[[], bool],
    seconds: float = LOOK_SECONDS,
    tell: bool = True,
) -> str | None:
    """Read the pane of PROMPT_ID's agent for SECONDS while LEFT says no hook waits on it any
    more; once two reads in a row show its dialog gone, close the prompt as moved-on and set
    the state they show. ``GONE`` when it did, ``SHOWN`` when the dialog still showed at the
    end (logged only when TELL), None when it stopped early: the prompt was closed meanwhile,
    a hook waits on it again, the agent has no pane of ours, or the daemon stops. A prompt with
    an answer recorded that no hook took is still open, and looked at as any other."""
    deadline = time.monotonic() + seconds
    before = ""
    while not ctx.stopping.is_set() and left():
        found = store.get_prompt(ctx.db.connect(), prompt_id)
        if found is None or found.closed_at is not None:
            return None  # an answer recorded that no hook took leaves it open: looked at
        early = found.created_at + DRAWN_SECONDS - time.time()
        if early > 0:  # not drawn yet, maybe: the look's time starts once it is
            deadline = max(deadline, time.monotonic() + early + seconds)
            time.sleep(min(early, LOOK_GAP))
            continue
        shown = _shown(ctx, found)
        if shown is None:
            return None
        if shown and shown == before:
            return GONE if _moved_on(ctx, found, shown) else None
        if time.monotonic() >= deadline:
            if tell:
                _left(ctx, found, SHOWN)
            return SHOWN
        before = shown
        time.sleep(LOOK_GAP)
    return None


def _shown(ctx: Ctx, prompt: store.Prompt) -> str | None:
    """What the pane of PROMPT's agent shows at the bottom of its screen: ``waiting`` (one of
    its harness's ``waitingPatterns``: the dialog was dismissed and the agent waits for
    input), ``working`` (its input box and no dialog), or "" (a dialog, or no input box);
    None when it cannot tell (no pane of ours, a harness not read through hooks)."""
    row = store.get(ctx.db.connect(), prompt.agent)
    if row is None:
        return None
    settings = ctx.config.attention_of(row.harness)
    if settings.signals != "hooks":
        return None
    adapter = recorded_adapter(ctx.config, row.harness)
    if adapter is None or adapter.ready_pattern is None:
        return None
    try:
        target = pane_of(ctx, prompt.agent)
    except Conflict:
        return None
    tmux = ctx.runners.tmux
    if tmux.owner_of(target) != prompt.agent:
        return None
    capture = tmux.capture(target, SCREEN_LINES)
    if not capture.ok:
        return None
    tail = tail_of(capture.text)
    if DIALOG_END in tail or re.search(adapter.ready_pattern, tail) is None:
        return ""
    if any(re.search(pattern, tail) for pattern in settings.waiting_patterns):
        return store.WAITING
    return store.WORKING


def _moved_on(ctx: Ctx, prompt: store.Prompt, state: str) -> bool:
    """Close PROMPT (moved-on, also when an answer no hook took was recorded for it: see
    ``store.attention.Prompt.untaken``) and set its agent's STATE, when it is still the open
    prompt the agent waits on."""
    with ctx.db.transaction() as tx:
        row = store.get(tx, prompt.agent)
        now_open = row.prompt if row is not None else None
        if now_open is None or now_open.id != prompt.id or now_open.closed_at is not None:
            return False
        store.set_state(tx, prompt.agent, state, SIGNAL, RULES[state], now=time.time())
    _left(ctx, prompt, GONE)
    return True


def _left(ctx: Ctx, prompt: store.Prompt, dialog: str) -> None:
    """Log ``hook.left``: what the look found of PROMPT's dialog (``gone``, ``shown``)."""
    row = store.get(ctx.db.connect(), prompt.agent)
    standing = row.standing if row is not None else None
    ev.emit(
        ctx.db,
        "hook.left",
        source="hook",
        work_item=row.work_item if row is not None else None,
        standing=standing,
        session_id=None if standing else prompt.agent,
        agent=prompt.agent,
        prompt_id=prompt.id,
        dialog=dialog,
    )
