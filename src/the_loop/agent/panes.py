"""What the policies and surfaces ask of an agent's tmux pane, without reaching the runner:
the targets the-loop named and who owns each, a probe, a capture, and the commands a person
runs to attach to or inspect it (``ctx.runners.tmux`` stays inside the agent layer and the
runner)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.refs import is_loop_target
from the_loop.runner.outcomes import AttachCommand, Capture, Probe

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


def attach_command(ctx: Ctx, target: str, *, read_only: bool = True) -> AttachCommand:
    """The argv a person runs to attach to TARGET (read-only unless READ_ONLY is False)."""
    return ctx.runners.tmux.attach_command(target, read_only=read_only)


def inspect_command(ctx: Ctx, target: str) -> str:
    """A shell command a person can run to look at TARGET read-only."""
    return ctx.runners.tmux.inspect_command(target)
