"""What the policies and surfaces ask of an agent's tmux pane, without reaching the runner:
the targets the-loop named and who owns each, a probe, a capture, and the commands a person
runs to attach to or inspect it (``ctx.runners.tmux`` stays inside the agent layer and the
runner)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from the_loop.agent.core import owned
from the_loop.agent.model import Agent
from the_loop.agent.runners import foreign_occupant
from the_loop.errors import NotFound, Unavailable
from the_loop.refs import is_loop_target
from the_loop.runner import AttachCommand, Capture, Probe, tmux_watch

if TYPE_CHECKING:
    from the_loop.context import Ctx


def loop_targets(ctx: Ctx) -> list[tuple[str, str | None]]:
    """The tmux targets the-loop named, each with the ownership mark set at its spawn (None
    when unset); empty when tmux did not answer."""
    tmux = ctx.runners.tmux
    return [(t, tmux.owner_of(t)) for t in tmux.list_targets() or [] if is_loop_target(t)]


def targets(ctx: Ctx) -> list[str] | None:
    """The names of the sessions on the private tmux server; None when tmux did not answer."""
    return ctx.runners.tmux.list_targets()


def probe(ctx: Ctx, target: str) -> Probe:
    """``live``, ``dead``, ``absent`` or ``unknown`` for TARGET; never raises."""
    return ctx.runners.tmux.probe(target)


def capture(ctx: Ctx, target: str, lines: int | None = 200) -> Capture:
    """The last LINES lines of TARGET's pane (None: the whole history)."""
    return ctx.runners.tmux.capture(target, lines)


def record(ctx: Ctx, target: str, *, escapes: bool = False) -> str | None:
    """TARGET's last screen (with its colours when ESCAPES) when its program has exited and
    the dead pane is kept as a record, or once the-loop has kept it and is ending the program
    (a close: its viewers were detached while the pane was alive, decision 0087); None while
    it runs, or when it is gone or tmux did not say. The screen is the one kept as the program
    ended (decision 0088). A dead pane is shown from this, never by attaching a tmux client to
    it (decision 0087)."""
    tmux = ctx.runners.tmux
    found = tmux.probe(target)
    if found is not Probe.DEAD and not (found is Probe.LIVE and tmux.ending(target)):
        return None
    shown = tmux.last_screen(target, escapes=escapes)
    return shown.text if shown.ok else None


@contextlib.contextmanager
def seen_ending(ctx: Ctx, target: str) -> Iterator[None]:
    """While the block runs, make tmux see TARGET's program end as soon as it does, in a
    process that has no daemon's reconciler to look (a person's ``attach`` while the daemon is
    down): the pane watch waits on the program, and at its end the pane is looked at, then
    again a moment later (tmux may mark it late). Looking wakes tmux's reaper when the end went
    unseen, so the pane's death hook runs: it resets the pane and detaches the person's client
    (decision 0088)."""

    def look() -> None:  # from the watch's thread
        ctx.runners.tmux.probe(target)
        again = threading.Timer(LOOK_AGAIN_SECONDS, ctx.runners.tmux.probe, (target,))
        again.daemon = True
        again.start()

    watch = tmux_watch.pane_watch(ctx.runners.tmux, lambda: None, look)
    try:
        watch.watch([], {target: None})
        yield
    finally:
        watch.close()


LOOK_AGAIN_SECONDS = 1.0
"""After an agent's end, when ``seen_ending`` looks at its pane once more."""


def attach_command(ctx: Ctx, target: str, *, read_only: bool = True) -> AttachCommand:
    """The argv a person runs to attach to TARGET (read-only unless READ_ONLY is False)."""
    return ctx.runners.tmux.attach_command(target, read_only=read_only)


def inspect_command(ctx: Ctx, target: str) -> str:
    """A shell command a person can run to look at TARGET read-only."""
    return ctx.runners.tmux.inspect_command(target)


def probe_many(ctx: Ctx, targets: Sequence[str]) -> dict[str, Probe] | None:
    """``probe`` for many TARGETS with one tmux client; None when tmux did not answer."""
    return tmux_watch.probe_many(ctx.runners.tmux, targets)


def server_ended(ctx: Ctx) -> str | None:
    """The socket of this node's tmux server when it is not running although dead panes are
    kept (``tmux.remainOnExit``): it does not end on its own while it holds an agent, so it
    crashed or was killed. None when it runs, tmux did not answer, or panes are not kept."""
    tmux = ctx.runners.tmux
    if not tmux.remain_on_exit or tmux.server_running() is not False:
        return None
    return tmux.socket


def owner_of(ctx: Ctx, target: str) -> str | None:
    """The ownership mark set on TARGET at its spawn; None when absent, unset or no answer."""
    return ctx.runners.tmux.owner_of(target)


def prefix_key(ctx: Ctx) -> str:
    """The prefix key of the-loop's tmux server (``C-b`` when it does not say)."""
    answer = ctx.runners.tmux.ask("show-options", "-gv", "prefix")
    prefix = answer.stdout.strip() if answer.ok else ""
    return prefix if prefix and len(prefix.split()) == 1 else "C-b"


@dataclass(frozen=True, slots=True)
class Terminal:
    """How a viewer attaches to an agent's pane: its target, whether read-only (a dead pane
    always is), the client to run, how to ask the size of a client showing the target's
    whole window (None when tmux cannot say), and whether the pane is dead."""

    target: str
    read_only: bool
    command: AttachCommand
    window_view: Callable[[], tuple[int, int] | None]
    record: Callable[[], str | None]
    """The pane's last screen with its colours once its program has exited, None while it
    runs (``record``): what a dead pane shows instead of a client, and what a viewer whose
    client the pane's death detached sees next."""
    dead: bool = False


def terminal(ctx: Ctx, agent: Agent, read_only: bool) -> Terminal:
    """How a viewer attaches to AGENT's pane (the same for every kind of session):
    ``NotFound`` when the pane is gone, ``Unavailable`` when tmux does not answer, ``Refused``
    when a foreign occupant holds the target."""
    tmux = ctx.runners.tmux
    target = agent.tmux_target
    found = tmux.probe(target)
    if found is Probe.ABSENT:
        raise NotFound(f"{agent.label or target} has no pane any more (tmux session {target})")
    if found is Probe.UNKNOWN:
        raise Unavailable(f"tmux did not answer about {target}")
    mine = owned(ctx, agent)
    if mine is None:
        raise Unavailable(f"tmux did not answer about {target}")
    if not mine:
        raise foreign_occupant(ctx, agent)
    dead = found is Probe.DEAD
    read_only = read_only or dead
    command = tmux.attach_command(target, read_only=read_only).unwrap()
    return Terminal(
        target,
        read_only,
        command,
        lambda: tmux.viewer_size(target),
        lambda: record(ctx, target, escapes=True),
        dead,
    )
