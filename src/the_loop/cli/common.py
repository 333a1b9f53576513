"""What every command shares: global options, the context, output in table or JSON."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from the_loop.config import LoadedConfig, load_config, load_recorded, resolve_config_path
from the_loop.config_errors import problems_word
from the_loop.context import Ctx, open_ctx
from the_loop.errors import ConfigInvalid


class Format(StrEnum):
    table = "table"
    json = "json"


@dataclass
class GlobalState:
    config_path: Path | None = None
    debug: bool = False
    loaded: LoadedConfig | None = None
    ctx: Ctx | None = None
    started_at: float = field(default_factory=time.time)


STATE = GlobalState()


def loaded_config() -> LoadedConfig:
    """The config for this invocation, loaded once.

    When the file is invalid but a daemon recorded the config it runs on for this file, that
    config is used and a warning names the file's problems: reading state and reaching the
    daemon keep working (docs/decisions/0017). What needs the file itself refuses it still:
    ``start``/``serve`` (``LoadedConfig.require_valid_file``), ``config validate|show``."""
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
    from the_loop.instance import daemon_running  # lazy: only when the file is invalid

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
        STATE.ctx = open_ctx(loaded=loaded_config())
    return STATE.ctx


def drain_outbox() -> None:
    """Post the write-backs this command queued (one bounded pass; what GitHub does not take
    now stays queued for the daemon). Commands that may queue write-backs call this last."""
    if STATE.ctx is None:
        return
    from the_loop import outbox  # lazy: start-up

    outbox.drain_pending(STATE.ctx, since=STATE.started_at)


def print_error(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)


def print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2, default=str) + "\n")


def print_table(columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str = "") -> None:
    """A table for people: Rich on a terminal; plain aligned columns (never wrapped) otherwise."""
    cells = [["" if v is None else str(v) for v in row] for row in rows]
    if not sys.stdout.isatty():
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(columns)]
        for line in [list(columns), *cells]:
            print("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip())
        return
    # lazy: start-up (Rich loads only for a table on a terminal)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title or None, box=None, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in cells:
        table.add_row(*row)
    Console(soft_wrap=True).print(table)
