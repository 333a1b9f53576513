"""Answering a question dialog by the keys it needs (``sessions answer``, ``the-loop answer``,
the dashboard's choices and answer box: ``POST /api/v1/sessions/{id}/answer``).

Claude Code's question dialog (its ``AskUserQuestion`` tool) numbers its choices and ends with
one that types an answer: a choice is its digit; a typed answer is that last digit, the text,
then Enter. Any other harness's question (read from its screen) takes the text and Enter. The
keys go only to the agent's own live pane, only while its screen still shows the question, and
the answer counts as given once the screen no longer shows it.

Each step of a typed answer waits until the screen shows it took (the cursor on the typing
choice, then the text on it) before the next is sent: keys sent in one burst can reach a busy
harness in one read, where the digit is no longer a shortcut and Enter picks the first choice.
An answer may come the moment the question is reported (the dashboard and Slack show it
live): the keys wait for the dialog to be drawn and to have been open ``SETTLE_SECONDS`` (and
seen drawn ``SEEN_SECONDS``), as Claude Code's dialog drops keys in its first moments; a typed
text is typed again (the field emptied first) until it shows.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from the_loop.agent.attention.screen import SCREEN_LINES, classify, tail_of
from the_loop.context import Ctx
from the_loop.errors import BadInput, Conflict, Unavailable
from the_loop.harness import recorded_adapter
from the_loop.prompts import sanitize
from the_loop.refs import attach_command, standing_target
from the_loop.runner import Probe, framed
from the_loop.store import attention as store
from the_loop.store import sessions as session_store

DIALOG_END = "Esc to cancel"
"""The last line of Claude Code's question dialog while it is shown."""
CONFIRM_SECONDS = 5.0
TYPED_HEAD = 16
"""How much of a typed answer must show on the typing choice (a long one wraps)."""


SETTLE_SECONDS = 0.5
"""No key goes to a question before it has been open this long: Claude Code's dialog drops
the keys that reach it in its first moments (a digit sent 0 to 0.1 s after the dialog was drawn
was lost, from 0.2 s on it was taken, with the pinned version)."""
SEEN_SECONDS = 0.3
"""Nor before it has been seen drawn this long: on a busy host the dialog is drawn well after
its hook reported it, and a key that follows the drawing at once is lost as well (a press in
the whole suite's run, 2026-12-05)."""
RETRY_SECONDS = 0.5
"""How long a step that may be sent again waits for the screen to show it before it is."""


@dataclass(frozen=True, slots=True)
class Step:
    """Keys for ``send-keys``, and what the screen shows once the harness took them (a
    regular expression for ``TmuxRunner.wait_ready``; None: nothing to wait for). With
    ``clear`` (keys that undo what an earlier try of it left), the step is sent again, cleared
    first, every ``RETRY_SECONDS`` until the screen shows it."""

    keys: list[str]
    shows: str | None = None
    clear: list[str] | None = None
    after: float = 0.0
    """Seconds to wait before the keys (an Enter after a paste, for a harness that takes one
    right after a paste as a new line: its ``submit_gap``)."""


@dataclass(frozen=True, slots=True)
class Typed:
    """What an answer typed: the steps, and the answer as a person reads it."""

    steps: list[Step]
    label: str


def keys_for(
    prompt: store.Prompt,
    choice: int | None,
    text: str | None,
    paste: Paste | None = None,
) -> Typed:
    """The keys that answer PROMPT with CHOICE (a number the dialog shows) or TEXT; ``BadInput``
    for a choice the dialog does not have, ``Conflict`` for a dialog of several questions.
    PASTE (a harness that reads bracketed-paste markers, asked in its input box by a question
    read from its screen): the text goes in as a paste, never as keys (a ``!`` typed into
    Gemini's input box switches it to shell mode, and the Enter would run the rest), its Enter
    after the harness's submit gap."""
    typed = " ".join(sanitize(text or "").split())
    if prompt.tool != store.QUESTION_TOOL:
        answer = typed or str(choice)
        if typed and paste is not None:
            return Typed(
                [Step(["-l", framed(typed, True)]), Step(["Enter"], after=paste.gap)], answer
            )
        return Typed([Step(["-l", answer]), Step(["Enter"])], answer)
    options = _options(prompt)
    if choice is not None:
        if not 1 <= choice <= len(options):
            raise BadInput(f"choose 1 to {len(options)}, or type an answer")
        return Typed([Step([str(choice)])], f"{choice}. {options[choice - 1]}")
    other = len(options) + 1
    on_it = rf"(?m)^ *\u276f *{other}\."  # the cursor's line of the dialog
    head = re.escape(typed[:TYPED_HEAD])
    return Typed(
        [
            Step([str(other)], on_it),
            # text that did not show (dropped, as in the dialog's first moments) is typed
            # again, the field emptied first (C-u), until it shows
            Step(["-l", typed], rf"{on_it} *{head}", clear=["C-u"]),
            Step(["Enter"]),
        ],
        typed,
    )


def _options(prompt: store.Prompt) -> list[str]:
    choices = prompt.choices
    if choices is None:
        raise Conflict(
            f"prompt {prompt.id} asks several questions: answer them in the agent's terminal "
            f"(`{attach_command(prompt.agent)}`)"
        )
    return choices


@dataclass(frozen=True, slots=True)
class Paste:
    """How a harness that reads bracketed-paste markers takes a paste: the seconds between
    it and the Enter that submits it (``submit_gap``)."""

    gap: float


def paste_of(ctx: Ctx, key: str) -> Paste | None:
    """How agent KEY's harness takes a paste, when it reads the markers (``frames_paste``)."""
    row = store.get(ctx.db.connect(), key)
    adapter = recorded_adapter(ctx.config, row.harness) if row is not None else None
    return Paste(adapter.submit_gap) if adapter is not None and adapter.frames_paste else None


def pane_of(ctx: Ctx, key: str) -> str:
    """The tmux target of agent KEY (work item or standing); ``Conflict`` without one."""
    if key.startswith(store.STANDING_PREFIX):
        return standing_target(key.removeprefix(store.STANDING_PREFIX))
    rec = session_store.get(ctx.db.connect(), key)
    if rec is None or not rec.live or rec.runner != "tmux" or not rec.tmux_target:
        raise Conflict(f"{key} has no live pane to answer in")
    return rec.tmux_target


def type_answer(ctx: Ctx, key: str, prompt: store.Prompt, typed: Typed) -> None:
    """Type TYPED into KEY's own live pane while it still shows PROMPT, and wait until it no
    longer does; ``Conflict`` (stale, not ours) or ``Unavailable`` (tmux, not taken)."""
    target, tmux = pane_of(ctx, key), ctx.runners.tmux
    if tmux.owner_of(target) != key or tmux.probe(target) is not Probe.LIVE:
        raise Conflict(f"prompt {prompt.id}: the pane is not the agent's any more")
    if not _until(ctx, target, prompt, shown=True):
        raise Conflict(f"the screen does not show prompt {prompt.id}; this answer is stale")
    # asked a moment ago (an answer from a live page, a button, a script), or drawn only just
    # now (a busy host draws the dialog well after its hook reported it): it was drawn at the
    # latest when it was seen
    time.sleep(max(prompt.created_at + SETTLE_SECONDS - time.time(), SEEN_SECONDS))
    for step in typed.steps:
        if not _send(ctx, target, step):
            raise Unavailable(
                f"the answer to {prompt.id} was not taken as typed; answer it in the agent's "
                f"terminal (`{attach_command(key)}`)"
            )
    if not _until(ctx, target, prompt, shown=False):
        raise Unavailable(
            f"the answer to {prompt.id} was typed, but the screen still shows the question; "
            f"answer it in the agent's terminal (`{attach_command(key)}`)"
        )


def _send(ctx: Ctx, target: str, step: Step) -> bool:
    """Send STEP's keys to TARGET; whether the screen showed they took within
    ``CONFIRM_SECONDS`` (sent again meanwhile when the step says how to clear a try).
    ``Unavailable`` when tmux refuses the keys."""
    tmux = ctx.runners.tmux
    deadline = time.monotonic() + CONFIRM_SECONDS
    if step.after > 0:
        time.sleep(step.after)
    while True:
        sent = tmux.run("send-keys", "-t", f"={target}:", *step.keys)
        if not sent.ok:
            raise Unavailable(f"tmux did not take the keys for {target}: {sent.stderr.strip()}")
        if step.shows is None:
            return True
        left = deadline - time.monotonic()
        if tmux.wait_ready(target, step.shows, min(left, RETRY_SECONDS) if step.clear else left):
            return True
        if step.clear is None or time.monotonic() >= deadline:
            return False
        cleared = tmux.run("send-keys", "-t", f"={target}:", *step.clear)
        if not cleared.ok:
            raise Unavailable(f"tmux did not take the keys for {target}: {cleared.stderr.strip()}")


def _until(ctx: Ctx, target: str, prompt: store.Prompt, shown: bool) -> bool:
    """Whether TARGET's screen shows PROMPT's question (SHOWN) or no longer does (not SHOWN)
    within ``CONFIRM_SECONDS``. Before typing: a hook reports a question as its dialog opens,
    a moment before the dialog is drawn, and a person on the dashboard can answer within it."""
    deadline = time.monotonic() + CONFIRM_SECONDS
    while _shows(ctx, target, prompt) is not shown:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def _shows(ctx: Ctx, target: str, prompt: store.Prompt) -> bool:
    """Whether TARGET's screen shows PROMPT's question now."""
    capture = ctx.runners.tmux.capture(target, SCREEN_LINES)
    if not capture.ok:
        raise Unavailable(f"tmux did not answer about {target}")
    tail = tail_of(capture.text).splitlines()
    if prompt.tool == store.QUESTION_TOOL:
        return any(DIALOG_END in line for line in tail)
    harness = store.get(ctx.db.connect(), prompt.agent)
    settings = ctx.config.attention_of(harness.harness if harness else "")
    verdict = classify(capture.text.rstrip(), 0.0, float("inf"), settings)
    return verdict.state == store.NEEDS_INPUT and verdict.text == prompt.text
