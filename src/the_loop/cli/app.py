"""The Typer application: global options and the command groups."""

from __future__ import annotations

from pathlib import Path

import typer

from the_loop import __version__
from the_loop.cli import (
    attention_cmd,
    common,
    config_cmd,
    daemon_cmd,
    doctor_cmd,
    events_cmd,
    inbox_cmd,
    mcp_cmd,
    outbox_cmd,
    poll_cmd,
    sessions_cmd,
    standing_cmd,
)

app = typer.Typer(
    name="the-loop",
    help="the-loop: a control plane for AI coding agents in tmux.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _version(value: bool) -> None:
    if value:
        print(f"the-loop {__version__}")
        raise typer.Exit(0)


@app.callback()
def main(
    config: Path | None = typer.Option(
        None,
        "--config",
        "-c",
        help="Config file (else $THE_LOOP_CONFIG, ./the-loop.yaml, "
        "~/.config/the-loop/config.yaml).",
        envvar=None,
    ),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of internal errors."),
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Print the version."
    ),
) -> None:
    """the-loop: GitHub and Slack activity in, AI coding agents in tmux out."""
    common.STATE.config_path = config
    common.STATE.debug = debug


app.add_typer(config_cmd.app, name="config")
app.command("init")(config_cmd.init)
app.command("events")(events_cmd.events)
app.command("doctor")(doctor_cmd.doctor)
app.add_typer(sessions_cmd.app, name="sessions")
app.command("dispatch")(sessions_cmd.dispatch)
app.add_typer(inbox_cmd.app, name="inbox")
app.add_typer(outbox_cmd.app, name="outbox")
app.command("poll")(poll_cmd.poll)
app.add_typer(standing_cmd.app, name="standing")
daemon_cmd.register(app)
app.command("mcp")(mcp_cmd.mcp)
app.add_typer(attention_cmd.app, name="attention")
sessions_cmd.app.command("allow")(attention_cmd.allow)
sessions_cmd.app.command("deny")(attention_cmd.deny)
app.command("hook")(attention_cmd.hook)
