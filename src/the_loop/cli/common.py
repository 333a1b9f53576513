"""What every command shares: global options, the context, output in table or JSON."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from the_loop.cli.plain import (
    STATUS_COLOURS,
    ago,
    colour_enabled,
    paint,
    print_empty,
    print_error,
    print_table,
    status_word,
)
from the_loop.errors import BadInput, ConfigInvalid

if TYPE_CHECKING:
    from the_loop.config import LoadedConfig
    from the_loop.context import Ctx
    from the_loop.runner import AttachCommand


__all__ = [  # what the commands print through (defined in cli.plain)
    "STATUS_COLOURS",
    "ago",
    "colour_enabled",
    "paint",
    "print_empty",
    "print_error",
    "print_table",
    "status_word",
]


class GlobalState:
    """This invocation's global options and what they loaded (a plain class: see
    ``instance.DaemonInfo`` on ``dataclasses`` and the CLI's start-up)."""

    def __init__(self) -> None:
        self.config_path: Path | None = None
        self.debug = False
        self.loaded: LoadedConfig | None = None
        self.ctx: Ctx | None = None
        self.started_at = time.time()


STATE = GlobalState()

REF_HELP = "github:OWNER/REPO#N, local:NAME or a session id"
"""What a REF argument naming a work item's session takes."""
REF_OR_STANDING_HELP = "github:OWNER/REPO#N, local:NAME, a session id or standing:NAME"
"""What a REF argument naming any agent (a work item's session or a standing session) takes."""


def loaded_config() -> LoadedConfig:
    """The config for this invocation, loaded once.

    When the file is invalid but a daemon recorded the config it runs on for this file, that
    config is used and a warning names the file's problems: reading state and reaching the
    daemon keep working (docs/decisions/0017). What needs the file itself refuses it still:
    ``start``/``serve`` (``LoadedConfig.require_valid_file``), ``config validate|show``."""
    # lazy: the config models load only for a command that reads the config
    from the_loop.config import load_config, load_recorded
    from the_loop.instance import resolve_config_path

    if STATE.loaded is None:
        try:
            STATE.loaded = load_config(STATE.config_path)
        except ConfigInvalid as exc:
            path = resolve_config_path(STATE.config_path)
            fallback = load_recorded(path, exc) if path is not None else None
            if fallback is None:
                raise
            _warn_recorded(fallback, exc)
            STATE.loaded = fallback
    return STATE.loaded


def _warn_recorded(loaded: LoadedConfig, exc: ConfigInvalid) -> None:
    # lazy: only when the file is invalid
    from the_loop.config.errors import problems_word
    from the_loop.instance import daemon_running

    problems = exc.problems or [exc.message]
    more = f" (and {problems_word(len(problems) - 1)} more)" if len(problems) > 1 else ""
    who = (
        f"the running daemon (pid {loaded.recorded_by}) uses"
        if daemon_running(loaded.config.state_path)
        else "the daemon last ran on"
    )
    print(
        f"warning: {loaded.path} is invalid: {problems[0]}{more}\n"
        f"warning: using the config {who} instead; `the-loop config validate` lists every "
        "problem, and `the-loop start` refuses the file until it is fixed",
        file=sys.stderr,
    )


def ctx() -> Ctx:
    """The service context for this invocation (config + database), opened once."""
    if STATE.ctx is None:
        from the_loop.context import open_ctx  # lazy: the store and runners load here

        STATE.ctx = open_ctx(loaded=loaded_config())
    return STATE.ctx


def drain_outbox() -> None:
    """Post the write-backs this command queued (one bounded pass; what GitHub does not take
    now stays queued for the daemon). Commands that may queue write-backs call this last."""
    if STATE.ctx is None:
        return
    from the_loop.outbox import drain as outbox  # lazy: start-up

    outbox.drain_pending(STATE.ctx, since=STATE.started_at)


def print_warning(message: str, stream: TextIO | None = None) -> None:
    """``warning: MESSAGE`` on STREAM (default stderr), the label yellow on a terminal."""
    out = stream or sys.stderr
    print(f"{paint('warning:', 'yellow', out)} {message}", file=out, flush=True)


@contextlib.contextmanager
def waiting(message: str) -> Iterator[None]:
    """A spinner with MESSAGE on stderr while the block runs, only when stderr is a terminal
    (scripts and pipes see nothing)."""
    if not sys.stderr.isatty():
        yield
        return
    from rich.console import Console  # lazy: start-up (Rich loads only for a terminal)

    with Console(stderr=True).status(message):
        yield


def print_json(data: Any) -> None:
    """DATA (a model, a list of them, a dataclass, plain values) in the output contract: the
    same JSON the API answers for the same object (``the_loop.wire``)."""
    from the_loop.wire import dumps  # lazy: pydantic

    sys.stdout.write(dumps(data) + "\n")


def require_terminal(what: str, instead: str) -> None:
    """``BadInput`` in one line unless stdin and stdout are a terminal (WHAT needs one;
    INSTEAD says what to run without one)."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise BadInput(f"{what} needs a terminal (stdin and stdout are not a tty); {instead}")


def attach(command: AttachCommand, read_only: bool) -> None:
    """Say how to detach, then run the tmux client of COMMAND on this terminal. When it ended
    because the agent exited (the dead pane's hook detaches its clients, decision 0088), print
    the screen the agent left, as attaching to it afterwards would; exit as the client did."""
    import subprocess  # lazy: start-up (only attach runs a client)

    from the_loop.agent import panes  # lazy: start-up (only attach asks)

    context = ctx()
    mode = "read-only (what you type is not sent); " if read_only else ""
    print(
        f"attaching {mode}detach with {panes.prefix_key(context)} d (the tmux prefix, then d); "
        "the agent keeps running",
        file=sys.stderr,
        flush=True,
    )
    with panes.seen_ending(context, command.target):  # with no daemon, no one else looks
        client = subprocess.run(list(command.argv), env=dict(command.env), check=False)
    last = panes.record(context, command.target)
    if last is not None:
        note = "note: the agent has exited; its last screen, kept as a record:"
        print(note, file=sys.stderr, flush=True)
        print(last)
    elif client.returncode != 0:
        raise SystemExit(client.returncode)
