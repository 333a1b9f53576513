"""The click pieces every command module builds on: a group that loads its commands only when
one is asked for (click's documented lazy-loading pattern), summaries that are never cut, and
the ``--format`` option.

Light on purpose (click only): every invocation loads it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

CONTEXT: dict[str, Any] = {"help_option_names": ["-h", "--help"], "show_default": True}
"""Click context settings of the root (subcommands inherit them): ``-h`` is ``--help``, and a
help text shows each option's default."""


class Command(click.Command):
    """A command whose summary in its group's help is its whole first paragraph, never cut
    at the width of a terminal (nor at an abbreviation such as "e.g.")."""

    def get_short_help_str(self, limit: int = 45) -> str:
        return summary(self)


def summary(command: click.Command) -> str:
    """The first paragraph of COMMAND's help (or its ``short_help``) on one line."""
    text = command.short_help or (command.help or "").split("\n\n")[0]
    return " ".join(text.split())


def format_option(*kinds: str) -> Callable[[F], F]:
    """``--format`` taking one of KINDS (default: the first)."""
    choices = kinds or ("table", "json")
    return click.option(
        "--format", "fmt", type=click.Choice(choices), default=choices[0], show_default=True
    )


def message_option(command: F) -> F:
    """The message of a ``say``: the words after its target (``say REF please rebase``), or
    ``--text``/``-t``; read with ``message_text``."""
    command = click.option(
        "--text", "-t", default=None, help="The message (instead of giving it after the target)."
    )(command)
    return click.argument(
        "words", nargs=-1, metavar="[TEXT]...", help="The message (its words joined by spaces)."
    )(command)


def message_text(words: tuple[str, ...], text: str | None) -> str:
    """The message ``message_option`` read; a usage error when it is missing or given twice
    (a blank one is the service's to refuse, as from every surface)."""
    if words and text is not None:
        raise click.UsageError("give the message once: after the target, or with --text")
    said = " ".join(words) if words else text
    if said is None:
        raise click.UsageError("give the message after the target, or with --text")
    return said


class Group(click.Group):
    """A command group whose commands are imported on first use: LAZY maps a command's name to
    ``module:attribute``. Given no arguments at all, it prints its help and exits 0 (as
    ``git``, ``gh`` and ``kubectl`` do) instead of a usage error."""

    command_class = Command

    def get_short_help_str(self, limit: int = 45) -> str:
        return summary(self)

    def __init__(
        self, *args: Any, lazy: dict[str, str] | None = None, bare_help: bool = True, **kw: Any
    ) -> None:
        super().__init__(*args, **kw)
        self.lazy = dict(lazy or {})
        self.bare_help = bare_help

    def list_commands(self, ctx: click.Context) -> list[str]:
        # in the order they were declared (the order the help shows)
        return [*self.lazy, *(n for n in self.commands if n not in self.lazy)]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        where = self.lazy.get(cmd_name)
        if where is None:
            return super().get_command(ctx, cmd_name)
        module, _, attribute = where.partition(":")
        command = getattr(importlib.import_module(module), attribute)
        if not isinstance(command, click.Command):
            raise TypeError(f"{where} is not a click command")
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if self.bare_help and not args and not ctx.resilient_parsing:
            click.echo(ctx.get_help(), color=ctx.color)
            ctx.exit(0)
        return super().parse_args(ctx, args)


Group.group_class = Group


def command(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], Command]:
    """``click.command`` making a ``Command`` (arguments with help texts)."""
    return click.command(name, cls=Command, **attrs)


def group(name: str | None = None, **attrs: Any) -> Callable[[Callable[..., Any]], Group]:
    """``click.group`` making a ``Group`` (lazy commands, help when bare)."""
    return click.group(name, cls=Group, **attrs)
