"""``the-loop completion bash|zsh|fish``, ``--show-completion`` and ``--install-completion``:
click's own shell completion for the whole command tree.

The script a shell loads runs ``the-loop`` with ``_THE_LOOP_COMPLETE`` set; click answers the
completions from the command tree (``cli.main`` hands such a run to click unchanged).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from the_loop.cli.base import command
from the_loop.errors import BadInput

PROG = "the-loop"
COMPLETE_VAR = "_THE_LOOP_COMPLETE"
SHELLS = ("bash", "zsh", "fish")
RC_FILES = {"bash": "~/.bashrc", "zsh": "~/.zshrc"}
FISH_FILE = "~/.config/fish/completions/the-loop.fish"


def _shell(name: str | None) -> str:
    """NAME, or the shell $SHELL names; ``BadInput`` for one click cannot complete."""
    shell = name or Path(os.environ.get("SHELL", "")).name
    if shell not in SHELLS:
        raise BadInput(
            f"no completion for shell {shell or '(none: $SHELL is not set)'!r}; "
            f"give one of {', '.join(SHELLS)}"
        )
    return shell


def script(root: click.Command, name: str | None) -> str:
    """The completion script of ROOT (the-loop's command tree) for shell NAME (default:
    $SHELL's)."""
    from click.shell_completion import get_completion_class  # lazy: only completion

    kind = get_completion_class(_shell(name))
    assert kind is not None  # every name of SHELLS is one of click's
    return kind(root, {}, PROG, COMPLETE_VAR).source()


def install(root: click.Command, name: str | None) -> None:
    """Make shell NAME (default: $SHELL's) load the completion script at start: fish reads
    its completions folder; bash and zsh get one line in their rc file (added once)."""
    shell = _shell(name)
    if shell == "fish":
        target = Path(FISH_FILE).expanduser()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(script(root, shell), encoding="utf-8")
        click.echo(f"wrote {target}; new fish shells complete the-loop")
        return
    rc = Path(RC_FILES[shell]).expanduser()
    line = f'eval "$({PROG} completion {shell})"'
    text = rc.read_text(encoding="utf-8") if rc.exists() else ""
    if line not in text.splitlines():
        with rc.open("a", encoding="utf-8") as handle:
            handle.write(("" if not text or text.endswith("\n") else "\n") + line + "\n")
    click.echo(f"{rc} loads the completion ({line}); open a new shell to use it")


@command("completion")
@click.argument("shell", required=False, type=click.Choice(SHELLS), help="Default: $SHELL's.")
@click.pass_context
def completion(ctx: click.Context, shell: str | None) -> None:
    """Print the shell completion script of bash, zsh or fish.

    Load it in the shell's start-up file, e.g. `eval "$(the-loop completion bash)"` in
    ~/.bashrc (or run `the-loop --install-completion`).
    """
    click.echo(script(ctx.find_root().command, shell), nl=False)
