"""The click application: global options and the command groups, each loaded only when invoked.

A command's module is imported when the command runs (or its help is shown), so a command
loads what it uses and nothing else (docs/decisions/0065).
"""

from __future__ import annotations

from pathlib import Path

import click

from the_loop.cli import common
from the_loop.cli.base import CONTEXT, Group

COMMANDS = {
    "init": "the_loop.cli.config_cmd:init",
    "events": "the_loop.cli.events_cmd:events",
    "doctor": "the_loop.cli.doctor_cmd:doctor",
    "dispatch": "the_loop.cli.sessions_cmd:dispatch",
    "poll": "the_loop.cli.poll_cmd:poll",
    "prune": "the_loop.cli.prune_cmd:prune",
    "serve": "the_loop.cli.daemon_cmd:serve",
    "start": "the_loop.cli.daemon_cmd:start",
    "stop": "the_loop.cli.daemon_cmd:stop",
    "status": "the_loop.cli.daemon_cmd:status",
    "mcp": "the_loop.cli.mcp_cmd:mcp",
    "usage": "the_loop.cli.spend_cmd:usage",
    "hook": "the_loop.cli.attention_cmd:hook",
    "completion": "the_loop.cli.completion_cmd:completion",
    "config": "the_loop.cli.config_cmd:app",
    "sessions": "the_loop.cli.sessions_cmd:app",
    "inbox": "the_loop.cli.inbox_cmd:app",
    "outbox": "the_loop.cli.outbox_cmd:app",
    "standing": "the_loop.cli.standing_cmd:app",
    "attention": "the_loop.cli.attention_cmd:app",
    "allow": "the_loop.cli.attention_cmd:allow_prompt",
    "deny": "the_loop.cli.attention_cmd:deny_prompt",
    "answer": "the_loop.cli.attention_cmd:answer_prompt",
}
"""Every top-level command: its name and where it is defined (``module:attribute``)."""


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from the_loop import __version__  # lazy: only --version

        click.echo(f"the-loop {__version__}")
        ctx.exit(0)


def _completion(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    if value is None or ctx.resilient_parsing:
        return
    from the_loop.cli import completion_cmd  # lazy: only these two options

    if param.name == "install_completion":
        completion_cmd.install(ctx.command, value or None)
    else:
        click.echo(completion_cmd.script(ctx.command, value or None), nl=False)
    ctx.exit(0)


@click.group(
    cls=Group,
    lazy=COMMANDS,
    name="the-loop",
    help="the-loop: a control plane for AI coding agents in tmux.",
    context_settings=CONTEXT,
)
@click.option(
    "--config",
    "-c",
    type=click.Path(path_type=Path),
    default=None,
    help="Config file (else $THE_LOOP_CONFIG, ./the-loop.yaml, ~/.config/the-loop/config.yaml).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of internal errors.")
@click.option(
    "--version",
    "-V",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Print the version.",
)
@click.option(
    "--install-completion",
    "install_completion",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[SHELL]",
    expose_value=False,
    is_eager=True,
    callback=_completion,
    help="Install completion for this shell (bash, zsh or fish; default: $SHELL's).",
)
@click.option(
    "--show-completion",
    "show_completion",
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[SHELL]",
    expose_value=False,
    is_eager=True,
    callback=_completion,
    help="Print the completion script of this shell (see `the-loop completion`).",
)
def app(config: Path | None, debug: bool) -> None:
    """the-loop: GitHub and Slack activity in, AI coding agents in tmux out."""
    common.STATE.config_path = config
    common.STATE.debug = debug
