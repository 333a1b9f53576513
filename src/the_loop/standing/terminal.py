"""A standing session's terminal from the CLI: how to attach to its pane, and its screen.

Like ``views.attach_plan`` and ``views.session_screen`` for work-item sessions; light (no agent
layer): it asks the standing views and the tmux doorway only.
"""

from __future__ import annotations

from dataclasses import dataclass

from the_loop.agent import panes
from the_loop.context import Ctx
from the_loop.errors import NotFound, NotRunning
from the_loop.refs import validate_standing_name
from the_loop.runner import AttachCommand
from the_loop.standing import node as standing_node
from the_loop.standing.defs import StandingView, ViewStatus
from the_loop.standing.views import list_standing


@dataclass(frozen=True, slots=True)
class StandingAttach:
    """The tmux client to run for a standing session and whether it attaches read-only; or,
    when its agent has exited, its last screen to show instead (``panes.record``)."""

    name: str
    command: AttachCommand | None
    read_only: bool
    screen: str | None = None


def running_view(ctx: Ctx, name: str) -> StandingView:
    """Standing session NAME, which must be running: ``BadInput`` for a bad name, ``NotFound``
    when none is declared or created, ``NotRunning`` (naming the start command) otherwise."""
    validate_standing_name(name)
    view = next((v for v in list_standing(ctx) if v.name == name), None)
    if view is None:
        raise NotFound(f"no standing session {name!r}")
    if view.status is not ViewStatus.running:
        raise NotRunning(
            f"standing session {name} is not running; start it with "
            f"`the-loop standing start {name}`"
        )
    return view


def _here(ctx: Ctx, view: StandingView, command: str) -> None:
    """``RunsElsewhere`` naming COMMAND when VIEW's agent runs on another live node."""
    if view.node is not None:
        standing_node.require_here(ctx, view.name, command)


def attach_plan(ctx: Ctx, name: str, read_only: bool = False) -> StandingAttach:
    """How to attach a terminal to running standing session NAME's pane."""
    view = running_view(ctx, name)
    flags = ["--read-only"] if read_only else []
    _here(ctx, view, standing_node.command("attach", name, *flags))
    last = panes.record(ctx, view.target)
    if last is not None:
        return StandingAttach(name, None, True, last)
    command = panes.attach_command(ctx, view.target, read_only=read_only).unwrap()
    return StandingAttach(name, command, read_only)


def screen(ctx: Ctx, name: str, lines: int = 200) -> str:
    """The last LINES lines of running standing session NAME's screen."""
    view = running_view(ctx, name)
    _here(ctx, view, standing_node.command("logs", name, "-n", str(lines)))
    return panes.capture(ctx, view.target, lines).unwrap().text
