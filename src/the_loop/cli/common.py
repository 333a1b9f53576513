"""What every command shares: global options, the context, output in table or JSON."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

from the_loop.config import LoadedConfig, load_config
from the_loop.context import Ctx, open_ctx
from the_loop.wire import dumps


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
    """The config for this invocation, loaded once."""
    if STATE.loaded is None:
        STATE.loaded = load_config(STATE.config_path)
    return STATE.loaded


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
    """DATA (a model, a list of them, a dataclass, plain values) in the output contract: the
    same JSON the API answers for the same object (``the_loop.wire``)."""
    sys.stdout.write(dumps(data) + "\n")


def ago(when: float | datetime | None, now: float | None = None) -> str:
    """How long ago WHEN (epoch seconds or a datetime) was, for people: ``45s ago``, ``3m ago``,
    ``2h ago``, ``4d ago``; ``-`` for None. Tables show this; JSON keeps the ISO time."""
    if when is None:
        return "-"
    moment = when.timestamp() if isinstance(when, datetime) else when
    seconds = max(0.0, (time.time() if now is None else now) - moment)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{int(seconds)}s ago"


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
