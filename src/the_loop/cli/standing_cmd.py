"""``the-loop standing …``: named agents that belong to no work item."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from the_loop.cli import common
from the_loop.errors import BadInput

if TYPE_CHECKING:
    from the_loop.standing import StartOutcome, StopOutcome

app = typer.Typer(
    help="Standing sessions: named agents that own no ticket (declared or created).",
    no_args_is_help=True,
)

NAME_HELP = "Standing session name (lowercase letters, digits and '-')."


def _ago(when: datetime | None) -> str:
    if when is None:
        return "-"
    seconds = max(0.0, time.time() - when.timestamp())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


@app.command("list")
def list_(fmt: common.Format = typer.Option(common.Format.table, "--format")) -> None:
    """List declared and created standing sessions with their status."""
    from the_loop.attention import column  # lazy: start-up
    from the_loop.standing_views import list_standing  # lazy: start-up

    views = list_standing(common.ctx())
    if fmt is common.Format.json:
        common.print_json([v.model_dump(mode="json", by_alias=True) for v in views])
        return
    att = column(common.ctx(), [(f"standing:{v.name}", v.status == "running") for v in views])
    common.print_table(
        [
            "NAME",
            "SOURCE",
            "STATUS",
            "ATTENTION",
            "HARNESS",
            "CWD",
            "TMUX TARGET",
            "STARTED",
            "LAST MESSAGE",
        ],
        [
            (
                v.name,
                v.source.value,
                v.status.value + (" (!)" if v.problems or v.note else ""),
                att[f"standing:{v.name}"],
                v.harness,
                v.cwd,
                v.target,
                _ago(v.started_at),
                _ago(v.last_message_at),
            )
            for v in views
        ],
    )
    for v in views:
        for line in [*v.problems, *([v.note] if v.note else [])]:
            print(f"note: {v.name}: {line}")


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
    from the_loop import standing

    if arg and no_args:
        raise BadInput("give --arg or --no-args, not both")
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
    """Stop and remove a created standing session (declared ones live in the config)."""
    # lazy: start-up
    from the_loop import standing

    result = standing.delete(common.ctx(), name)
    print(f"deleted {result.name} ({result.stop.outcome.value})")


@app.command("start")
def start(
    name: str | None = typer.Argument(None, help="Default: every declared and created one."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Start (or resume) a standing session; a running one is left alone."""
    # lazy: start-up
    from the_loop import standing

    outcomes = standing.start(common.ctx(), name)
    if fmt is common.Format.json:
        common.print_json([o.model_dump(mode="json", by_alias=True) for o in outcomes])
    else:
        _print_starts(outcomes)
    if any(o.error for o in outcomes):
        raise typer.Exit(1)


def _print_starts(outcomes: Sequence[StartOutcome]) -> None:
    if not outcomes:
        print("no standing sessions are declared or created")
    for o in outcomes:
        if o.error:
            print(f"{o.name}: {o.outcome.value}: {o.error}")
        else:
            conversation = f", conversation {o.conversation_id}" if o.conversation_id else ""
            print(f"{o.name}: {o.outcome.value} in {o.target}{conversation}")


@app.command("stop")
def stop(
    name: str | None = typer.Argument(None, help="Default: every recorded one."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Stop a standing session: the agent first, then its tmux session."""
    # lazy: start-up
    from the_loop import standing

    outcomes = standing.stop(common.ctx(), name)
    if fmt is common.Format.json:
        common.print_json([o.model_dump(mode="json", by_alias=True) for o in outcomes])
    else:
        _print_stops(outcomes)
    if any(o.error for o in outcomes):
        raise typer.Exit(1)


def _print_stops(outcomes: Sequence[StopOutcome]) -> None:
    if not outcomes:
        print("no standing sessions are recorded")
    for o in outcomes:
        print(f"{o.name}: {o.outcome.value}" + (f": {o.error}" if o.error else ""))


@app.command("restart")
def restart(name: str = typer.Argument(..., help=NAME_HELP)) -> None:
    """Stop, then start a standing session again (resuming its conversation)."""
    # lazy: start-up
    from the_loop import standing

    _print_starts([standing.restart(common.ctx(), name)])


@app.command("say")
def say(
    name: str = typer.Argument(..., help=NAME_HELP),
    text: str = typer.Option(..., "--text", "-t", help="The message."),
    actor: str | None = typer.Option(None, "--actor", help="Who is speaking (default: $USER)."),
) -> None:
    """Send a message into a running standing session (never starts one)."""
    # lazy: start-up
    from the_loop import standing

    result = standing.say(common.ctx(), name, text, actor)
    print(f"delivered to {result.name} ({result.chars} chars)")
