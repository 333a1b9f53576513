"""``the-loop standing …``: named agents that belong to no work item."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from the_loop.cli import common, plain
from the_loop.cli.base import format_option, group, message_option, message_text
from the_loop.errors import BadInput
from the_loop.pricing import cost_text

if TYPE_CHECKING:
    from the_loop.standing.service import StartOutcome, StopOutcome

NAME_HELP = "Standing session name (lowercase letters, digits and '-')."


@group(
    "standing",
    help="Standing sessions: named agents that own no ticket.\n\n"
    "Declared in the config (standing.sessions) or created at runtime.",
)
def app() -> None:
    pass


@app.command("list")
@format_option()
def list_(fmt: str) -> None:
    """List declared and created standing sessions with their status."""
    from the_loop.cli import remote  # lazy: start-up

    answer = remote.standing()
    if answer is not None:  # the running daemon's (docs/decisions/0065)
        remote.print_standing(answer, fmt)
        return
    from the_loop.standing.views import list_standing  # lazy: start-up
    from the_loop.wire import to_wire

    views = list_standing(common.ctx())
    if fmt == "json":
        common.print_json(views)
        return
    # several nodes on one database: which one runs each
    plain.print_standing(to_wire(views), nodes=common.ctx().db.shared)


@app.command("create")
@click.argument("name", help=NAME_HELP)
@click.option("--harness", default=None, help="Default: routing.defaultHarness.")
@click.option(
    "--cwd",
    type=click.Path(),
    default=None,
    help="Default: <stateDir>/standing/NAME.",
)
@click.option("--prompt", default=None, help="The brief, after the directive.")
@click.option(
    "--prompt-file", type=click.Path(path_type=Path), default=None, help="Read the brief here."
)
@click.option("--description", default="", help="One line for people.")
@click.option(
    "--arg", multiple=True, help="Extra harness argv (repeat); default: the harness's args."
)
@click.option("--no-args", is_flag=True, help="No extra harness argv at all.")
@click.option("--no-auto-start", is_flag=True, help="Not started by the daemon.")
@click.option("--no-start", is_flag=True, help="Store it without starting it.")
def create(
    name: str,
    harness: str | None,
    cwd: str | None,
    prompt: str | None,
    prompt_file: Path | None,
    description: str,
    arg: tuple[str, ...],
    no_args: bool,
    no_auto_start: bool,
    no_start: bool,
) -> None:
    """Create a standing session and start it."""
    # lazy: start-up
    from the_loop.standing import service as standing

    if arg and no_args:
        raise BadInput("give --arg or --no-args, not both")
    if cwd is not None and not cwd.strip():  # an unset variable, most likely: not "here"
        raise BadInput("--cwd is empty: name a directory, or leave it out for the default")
    with common.waiting(f"creating {name}…"):
        result = standing.create(
            common.ctx(),
            name,
            harness=harness,
            args=[] if no_args else (list(arg) if arg else None),
            cwd=Path(cwd) if cwd is not None else None,
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
@click.argument("name", help=NAME_HELP)
def delete(name: str) -> None:
    """Stop and remove a created standing session.

    Declared ones live in the config: remove them there.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"stopping {name}…"):
        result = standing.delete(common.ctx(), name)
    print(f"deleted {result.name} ({result.stop.outcome.value})")


@app.command("start")
@click.argument("name", required=False, help="Default: every declared and created one.")
@format_option()
def start(name: str | None, fmt: str) -> None:
    """Start (or resume) a standing session.

    A running one is left alone.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"starting {name or 'the standing sessions'}…"):
        outcomes = standing.start(common.ctx(), name)
    if fmt == "json":
        common.print_json(outcomes)
    else:
        _print_starts(outcomes)
    if any(o.error for o in outcomes):
        sys.exit(1)


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
@click.argument("name", required=False, help="Default: every recorded one.")
@format_option()
def stop(name: str | None, fmt: str) -> None:
    """Stop a standing session: the agent first, then its tmux session."""
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"stopping {name or 'the standing sessions'}…"):
        outcomes = standing.stop(common.ctx(), name)
    if fmt == "json":
        common.print_json(outcomes)
    else:
        _print_stops(outcomes)
    if any(o.error for o in outcomes):
        sys.exit(1)


def _print_stops(outcomes: Sequence[StopOutcome]) -> None:
    if not outcomes:
        print("no standing sessions are recorded")
    for o in outcomes:
        word = common.status_word(o.outcome.value)
        print(f"{o.name}: {word}" + (f": {o.error}" if o.error else ""))


@app.command("restart")
@click.argument("name", help=NAME_HELP)
def restart(name: str) -> None:
    """Stop, then start a standing session again.

    It resumes its conversation.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"restarting {name}…"):
        outcome = standing.restart(common.ctx(), name)
    _print_starts([outcome])


@app.command("say")
@click.argument("name", help=NAME_HELP)
@message_option
@click.option("--actor", default=None, help="Who is speaking (default: $USER).")
def say(name: str, words: tuple[str, ...], text: str | None, actor: str | None) -> None:
    """Send a message into a running standing session: `say NAME hello`, or --text.

    Never starts one.
    """
    from the_loop.standing import service as standing  # lazy: start-up

    print(standing.say(common.ctx(), name, message_text(words, text), actor).detail)


@app.command("extend")
@click.argument("name", help=NAME_HELP)
@click.option(
    "--usd", type=click.FloatRange(min=0), default=0.0, help="Dollars added to its budgets."
)
@click.option(
    "--turns", type=click.IntRange(min=0), default=0, help="Turns added to budgets.maxTurns."
)
@format_option()
def extend(name: str, usd: float, turns: int, fmt: str) -> None:
    """Raise a standing session's budget (and resume it).

    One stopped over budget resumes its conversation; messages can be sent again.
    """
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting(f"extending {name}…"):
        done = standing.extend(common.ctx(), name, usd, turns)
    if fmt == "json":
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
@click.argument("name", help=NAME_HELP)
@click.option("--read-only", "-r", is_flag=True, help="Watch without typing.")
def attach(name: str, read_only: bool) -> None:
    """Attach this terminal to a running standing session's tmux pane.

    Detach with the tmux prefix, then d (C-b d unless the prefix was changed); the agent keeps
    running. Needs a terminal; without one, read the screen with `standing logs NAME`. When
    its agent has exited, its last screen is printed instead (and when it exits while you
    watch, you are detached and shown it).
    """
    from the_loop.standing.terminal import attach_plan  # lazy: start-up

    common.require_terminal("attach", f"read the screen with `the-loop standing logs {name}`")
    plan = attach_plan(common.ctx(), name, read_only)
    if plan.command is None:
        note = f"note: the agent of standing session {name} has exited; its last screen:"
        print(note, file=sys.stderr, flush=True)  # as `sessions attach` says it
        print(plan.screen or "")
        return
    common.attach(plan.command, plan.read_only)


@app.command("logs")
@click.argument("name", help=NAME_HELP)
@click.option("--lines", "-n", type=click.IntRange(1, 100_000), default=200)
def logs(name: str, lines: int) -> None:
    """Print the last lines of a running standing session's screen."""
    from the_loop.standing.terminal import screen  # lazy: start-up

    sys.stdout.write(screen(common.ctx(), name, lines).rstrip("\n") + "\n")
