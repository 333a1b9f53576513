"""``the-loop standing …``: named agents that belong to no work item."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from the_loop.cli import common, plain
from the_loop.errors import BadInput
from the_loop.pricing import cost_text
from the_loop.wire import to_wire

if TYPE_CHECKING:
    from the_loop.standing.service import StartOutcome, StopOutcome

app = typer.Typer(
    help="Standing sessions: named agents that own no ticket.\n\n"
    "Declared in the config (standing.sessions) or created at runtime.",
    no_args_is_help=True,
)

NAME_HELP = "Standing session name (lowercase letters, digits and '-')."


@app.command("list")
def list_(fmt: common.Format = typer.Option(common.Format.table, "--format")) -> None:
    """List declared and created standing sessions with their status."""
    from the_loop.standing.views import list_standing  # lazy: start-up

    views = list_standing(common.ctx())
    if fmt is common.Format.json:
        common.print_json(views)
        return
    # several nodes on one database: which one runs each
    plain.print_standing(to_wire(views), nodes=common.ctx().db.shared)


@app.command("create")
def create(
    name: str = typer.Argument(..., help=NAME_HELP),
    harness: str | None = typer.Option(None, "--harness", help="Default: routing.defaultHarness."),
    cwd: Path | None = typer.Option(None, "--cwd", help="Default: <stateDir>/standing/NAME."),
    prompt: str | None = typer.Option(None, "--prompt", help="The brief, after the directive."),
    prompt_file: Path | None = typer.Option(None, "--prompt-file", help="Read the brief here."),
    description: str = typer.Option("", "--description", help="One line for people."),
    arg: list[str] | None = typer.Option(
        None, "--arg", help="Extra harness argv (repeat); default: the harness's args."
    ),
    no_args: bool = typer.Option(False, "--no-args", help="No extra harness argv at all."),
    no_auto_start: bool = typer.Option(False, "--no-auto-start", help="Not started by the daemon."),
    no_start: bool = typer.Option(False, "--no-start", help="Store it without starting it."),
) -> None:
    """Create a standing session and start it."""
    # lazy: start-up
    from the_loop.standing import service as standing

    if arg and no_args:
        raise BadInput("give --arg or --no-args, not both")
    with common.waiting(f"creating {name}…"):
        result = standing.create(
            common.ctx(),
            name,
            harness=harness,
            args=[] if no_args else (list(arg) if arg else None),
            cwd=cwd,
            prompt=prompt,
            prompt_file=prompt_file,
            description=description,
            auto_start=not no_auto_start,
            start_now=not no_start,
        )
    print(f"created {name} ({result.definition.harness}, cwd {result.definition.cwd})")
    if result.start is not None:
        _print_starts([result.start])


@app.command("delete")
def delete(name: str = typer.Argument(..., help=NAME_HELP)) -> None:
    """Stop and remove a created standing session.

    Declared ones live in the config: remove them there.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"stopping {name}…"):
        result = standing.delete(common.ctx(), name)
    print(f"deleted {result.name} ({result.stop.outcome.value})")


@app.command("start")
def start(
    name: str | None = typer.Argument(None, help="Default: every declared and created one."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Start (or resume) a standing session.

    A running one is left alone.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"starting {name or 'the standing sessions'}…"):
        outcomes = standing.start(common.ctx(), name)
    if fmt is common.Format.json:
        common.print_json(outcomes)
    else:
        _print_starts(outcomes)
    if any(o.error for o in outcomes):
        raise typer.Exit(1)


def _print_starts(outcomes: Sequence[StartOutcome]) -> None:
    if not outcomes:
        print("no standing sessions are declared or created")
    for o in outcomes:
        if o.error:
            print(f"{o.name}: {common.status_word(o.outcome.value)}: {o.error}")
        else:
            conversation = f", conversation {o.conversation_id}" if o.conversation_id else ""
            print(f"{o.name}: {common.status_word(o.outcome.value)} in {o.target}{conversation}")


@app.command("stop")
def stop(
    name: str | None = typer.Argument(None, help="Default: every recorded one."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Stop a standing session: the agent first, then its tmux session."""
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"stopping {name or 'the standing sessions'}…"):
        outcomes = standing.stop(common.ctx(), name)
    if fmt is common.Format.json:
        common.print_json(outcomes)
    else:
        _print_stops(outcomes)
    if any(o.error for o in outcomes):
        raise typer.Exit(1)


def _print_stops(outcomes: Sequence[StopOutcome]) -> None:
    if not outcomes:
        print("no standing sessions are recorded")
    for o in outcomes:
        word = common.status_word(o.outcome.value)
        print(f"{o.name}: {word}" + (f": {o.error}" if o.error else ""))


@app.command("restart")
def restart(name: str = typer.Argument(..., help=NAME_HELP)) -> None:
    """Stop, then start a standing session again.

    It resumes its conversation.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"restarting {name}…"):
        outcome = standing.restart(common.ctx(), name)
    _print_starts([outcome])


@app.command("say")
def say(
    name: str = typer.Argument(..., help=NAME_HELP),
    text: str = typer.Option(..., "--text", "-t", help="The message."),
    actor: str | None = typer.Option(None, "--actor", help="Who is speaking (default: $USER)."),
) -> None:
    """Send a message into a running standing session.

    Never starts one.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    result = standing.say(common.ctx(), name, text, actor)
    if result.held:
        print(f"{result.held} in {result.name}; delivered once it is answered")
    else:
        print(f"delivered to {result.name} ({result.chars} chars)")


@app.command("extend")
def extend(
    name: str = typer.Argument(..., help=NAME_HELP),
    usd: float = typer.Option(0.0, "--usd", min=0, help="Dollars added to its budgets."),
    turns: int = typer.Option(0, "--turns", min=0, help="Turns added to budgets.maxTurns."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Raise a standing session's budget (and resume it).

    One stopped over budget resumes its conversation; messages can be sent again.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"extending {name}…"):
        done = standing.extend(common.ctx(), name, usd, turns)
    if fmt is common.Format.json:
        common.print_json(done)
        return
    print(
        f"extended {done.name}: +${done.extra_usd:g}, +{done.extra_turns} turns in all; spent "
        f"{cost_text(done.usage.cost_usd, done.usage.priced, '$')} in {done.usage.turns} turns"
    )
    if done.over_budget:
        print(f"still over budget: {done.over_budget}; it stays stopped")
    elif done.resumed is not None:
        _print_starts([done.resumed])


@app.command("attach")
def attach(
    name: str = typer.Argument(..., help=NAME_HELP),
    read_only: bool = typer.Option(False, "--read-only", "-r", help="Watch without typing."),
) -> None:
    """Attach this terminal to a running standing session's tmux pane.

    Detach with the tmux prefix, then d (C-b d unless the prefix was changed); the agent keeps
    running. Needs a terminal; without one, read the screen with `standing logs NAME`.
    """
    from the_loop.standing.terminal import attach_plan  # lazy: start-up

    common.require_terminal("attach", f"read the screen with `the-loop standing logs {name}`")
    plan = attach_plan(common.ctx(), name, read_only)
    common.exec_attach(plan.command, common.tmux_prefix(common.ctx()), plan.read_only)


@app.command("logs")
def logs(
    name: str = typer.Argument(..., help=NAME_HELP),
    lines: int = typer.Option(200, "--lines", "-n", min=1, max=100_000),
) -> None:
    """Print the last lines of a running standing session's screen."""
    from the_loop.standing.terminal import screen  # lazy: start-up

    sys.stdout.write(screen(common.ctx(), name, lines).rstrip("\n") + "\n")
