"""The Typer application: global options and the command groups."""

from __future__ import annotations

from pathlib import Path

import typer
from typer import _click as click
from typer.core import TyperGroup

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
    prune_cmd,
    sessions_cmd,
    spend_cmd,
    standing_cmd,
)

CONTEXT = {"help_option_names": ["-h", "--help"]}
"""Click context settings of every command (subcommands inherit them): ``-h`` is ``--help``."""


class HelpGroup(TyperGroup):
    """A command group that, given no arguments at all, prints its help and exits 0 (as
    ``git``, ``gh`` and ``kubectl`` do) instead of a usage error."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            typer.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)


app = typer.Typer(
    name="the-loop",
    help="the-loop: a control plane for AI coding agents in tmux.",
    cls=HelpGroup,
    context_settings=CONTEXT,
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


app.add_typer(config_cmd.app, name="config", cls=HelpGroup)
app.command("init")(config_cmd.init)
app.command("events")(events_cmd.events)
app.command("doctor")(doctor_cmd.doctor)
app.add_typer(sessions_cmd.app, name="sessions", cls=HelpGroup)
app.command("dispatch")(sessions_cmd.dispatch)
app.add_typer(inbox_cmd.app, name="inbox", cls=HelpGroup)
app.add_typer(outbox_cmd.app, name="outbox", cls=HelpGroup)
app.command("poll")(poll_cmd.poll)
app.command("prune")(prune_cmd.prune)
app.add_typer(standing_cmd.app, name="standing", cls=HelpGroup)
daemon_cmd.register(app)
app.command("mcp")(mcp_cmd.mcp)
app.add_typer(attention_cmd.app, name="attention")
sessions_cmd.app.command("allow")(attention_cmd.allow)
sessions_cmd.app.command("deny")(attention_cmd.deny)
sessions_cmd.app.command("answer")(attention_cmd.answer)
sessions_cmd.app.command("extend")(spend_cmd.extend)
app.command("usage")(spend_cmd.usage)
app.command("hook")(attention_cmd.hook)
