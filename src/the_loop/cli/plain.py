"""Output for people that needs no pydantic: errors, colour, status words, ages and tables.
The commands print through these (``cli.common`` re-exports them) both what they read from the
store and what the running daemon answered (``cli.remote``), so the two print alike.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, TextIO

from the_loop.pricing import cost_text


def print_error(message: str) -> None:
    print(f"{paint('error:', 'red', sys.stderr)} {message}", file=sys.stderr)


_SGR = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2"}

STATUS_COLOURS: dict[str, str] = {
    "ok": "green",
    "healthy": "green",
    "running": "green",
    "active": "green",
    "started": "green",
    "resumed": "green",
    "stopped": "dim",
    "closed": "dim",
    "absent": "dim",
    "warn": "yellow",
    "paused": "yellow",
    "queued": "yellow",
    "suspended": "yellow",
    "already-running": "yellow",
    "over-budget": "red",
    "unhealthy": "red",
    "failed": "red",
    "MISSING": "red",
    "FAILED": "red",
}
"""The colour a status word gets on a terminal (``status_word``)."""


def colour_enabled(stream: TextIO) -> bool:
    """Colour only on a terminal, never when NO_COLOR is set (https://no-color.org) or the
    terminal is dumb; pipes and files always get plain text."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except ValueError:  # a closed stream
        return False


def paint(text: str, colour: str | None, stream: TextIO | None = None) -> str:
    """TEXT in COLOUR (a key of ``_SGR``) when STREAM (default stdout) shows colour."""
    if colour is None or not colour_enabled(stream or sys.stdout):
        return text
    return f"\x1b[{_SGR[colour]}m{text}\x1b[0m"


def status_word(word: str, stream: TextIO | None = None, width: int = 0) -> str:
    """A status word padded to WIDTH, coloured by ``STATUS_COLOURS`` on a terminal."""
    return paint(word.ljust(width), STATUS_COLOURS.get(word.strip()), stream)


def print_empty(what: str, hint: str) -> None:
    """What an empty table says instead: ``no WHAT`` and how to get one."""
    print(f"no {what}; {hint}")


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
    from rich.text import Text

    table = Table(title=title or None, box=None, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in cells:
        table.add_row(*(Text.from_ansi(c) for c in row))
    Console(soft_wrap=True).print(table)


# --- the read-only commands' output (from the store or from the daemon's JSON) ---------------

SessionLine = tuple[str, str, str, str, str, str | None, int, str, float, float]
"""One ``sessions list`` row: work item, status, attention state (``-`` when none), harness,
runner, tmux target, turns, cost in USD as ``pricing.cost_text`` shows it (``-``: not
metered), created and last-event times."""


def print_sessions(
    lines: Sequence[SessionLine], status: str | None, nodes: Sequence[str] | None = None
) -> None:
    """The ``sessions list`` table of LINES (newest first), or what an empty one says; with
    NODES (one per line), a NODE column after the status."""
    if not lines:
        print_empty(
            f"{status} sessions" if status else "sessions",
            "one starts when an authorized user comments `the-loop start` on an issue "
            "(or try `the-loop dispatch`, see docs/sessions.md)",
        )
        return
    now = time.time()
    headers = ["WORK ITEM", "STATUS", "ATTENTION", "HARNESS", "RUNNER", "TMUX TARGET"]
    headers += ["TURNS", "COST USD", "CREATED", "LAST EVENT"]
    table: list[list[Any]] = [
        [
            item,
            status_word(state),
            attention,
            harness,
            runner,
            target or "-",
            turns,
            cost,
            ago(created, now),
            ago(last, now),
        ]
        for item, state, attention, harness, runner, target, turns, cost, created, last in lines
    ]
    if nodes is not None:
        headers.insert(2, "NODE")
        for row, node in zip(table, nodes, strict=True):
            row.insert(2, node)
    print_table(headers, table)


STANDING_COLUMNS = ["NAME", "SOURCE", "STATUS", "ATTENTION", "HARNESS", "CWD", "TMUX TARGET"]
STANDING_COLUMNS += ["TURNS", "COST USD", "STARTED", "LAST MESSAGE"]


def print_standing(views: Sequence[dict[str, Any]], nodes: bool = False) -> None:
    """The ``standing list`` table of VIEWS (each as the API answers it: ``GET
    /api/v1/standing``), its notes after it, or what an empty one says; with NODES, a last
    NODE column (several nodes on one database)."""
    if not views:
        print_empty(
            "standing sessions",
            "declare one under standing.sessions in the config or run "
            "`the-loop standing create NAME --prompt BRIEF`",
        )
        return
    now = time.time()
    table = []
    for v in views:
        attention, used = v.get("attention"), v.get("usage")
        flagged = " (!)" if v.get("problems") or v.get("note") else ""
        table.append(
            [
                v["name"],
                v["source"],
                status_word(str(v["status"])) + flagged,
                attention["state"] if attention else "-",
                v["harness"],
                v["cwd"],
                v["target"],
                used["turns"] if used else 0,
                cost_text(used.get("costUsd"), used.get("priced", True)) if used else "-",
                ago(_when(v.get("startedAt")), now),
                ago(_when(v.get("lastMessageAt")), now),
                *([v.get("node") or "-"] if nodes else []),
            ]
        )
    print_table([*STANDING_COLUMNS, *(["NODE"] if nodes else [])], table)
    for v in views:
        for line in [*(v.get("problems") or []), *([v["note"]] if v.get("note") else [])]:
            print(f"note: {v['name']}: {line}")


def _when(text: object) -> datetime | None:
    return _parse_iso(text) if isinstance(text, str) else None


def event_line(ts: datetime, level: str, type_: str, subject: str, payload: dict[str, Any]) -> str:
    """One event as ``events`` prints it in a table: time (UTC), level, type, subject
    (work item, ``standing:NAME`` or ``-``) and the payload as ``key=value`` (lists and objects
    as ``readable`` shows them, never a Python repr)."""
    detail = " ".join(f"{k}={_nested(v)}" for k, v in payload.items())
    line = f"{ts.strftime('%Y-%m-%d %H:%M:%S')}  {level:<7}  {type_:<26}  {subject:<28}  {detail}"
    return line.rstrip()


_LABEL = 11
"""The width of a ``status`` label (``attention:`` and a space): the values line up."""


def status_text(report: dict[str, Any]) -> str:
    """``status`` for people, from the status report's JSON (REPORT): one line saying whether
    the daemon runs and is healthy, then one aligned ``label: value`` line per part, like
    ``systemctl status``; a cluster's nodes as a small table. Never a Python repr."""
    running = bool(report.get("running"))
    state = "healthy" if report.get("healthy") else ("unhealthy" if running else "stopped")
    head = f"the-loop: {status_word(state)}"
    if running:
        started = report.get("startedAt")
        up = ago(_parse_iso(started) if isinstance(started, str) else None).removesuffix(" ago")
        head += f" (pid {report.get('pid')}, version {report.get('version')}, up {up})"
    out = [head]
    if running:
        out.append(label_line("url", str(report.get("url"))))
        out.append(label_line("config", config_label(report.get("configPath"))))
    out.append(label_line("sessions", counts_text(report.get("sessions")) or "none"))
    asking = counts_text(report.get("attention"))
    if asking:  # live sessions waiting on a person, by state
        out.append(label_line("attention", asking))
    health = report.get("health") or {}
    for part, detail in (health.get("detail") or {}).items():
        out.extend(detail_lines(str(part), detail))
    memory = report.get("memory")
    if memory is not None:
        free = memory.get("availableMb")
        live = int(memory.get("liveAgents") or 0)
        waiting = memory.get("waiting")
        out.append(
            label_line(
                "memory",
                f"{live} live {'agent holds' if live == 1 else 'agents hold'} "
                f"{float(memory.get('agentsAnonMb') or 0):.0f} MiB "
                f"({float(memory.get('agentsRssMb') or 0):.0f} MiB resident); "
                f"{'?' if free is None else f'{free:.0f}'} MiB available"
                + (f" (starts wait: {waiting})" if waiting else ""),
            )
        )
    disk = report.get("worktrees")
    if disk is not None:  # the disk used by worktrees (workspaces enabled)
        count, spares = int(disk.get("worktrees") or 0), int(disk.get("spares") or 0)
        out.append(
            label_line(
                "worktrees",
                f"{count} {'uses' if count == 1 else 'use'} "
                f"{float(disk.get('bytes') or 0) / 2**20:.1f} MiB"
                + (f" ({spares} ready spare{'s' * (spares != 1)} included)" if spares else ""),
            )
        )
    out.extend(label_line("problem", str(problem)) for problem in health.get("problems") or [])
    return "\n".join(out)


def label_line(label: str, value: str) -> str:
    return f"  {label + ':':<{_LABEL}}{value}"


def counts_text(counts: object) -> str:
    """Counts by status (``{"active": 2, "closed": 1}``) for people: ``2 active, 1 closed``;
    zeros left out, empty when nothing is counted."""
    if not isinstance(counts, dict):
        return ""
    return ", ".join(f"{n} {k}" for k, n in counts.items() if n)


def detail_lines(part: str, detail: object) -> list[str]:
    """One health check's figures (``health.detail[PART]``) as ``status`` lines: counts as
    ``2 pending``, states by name as ``triage running``, a cluster's nodes as a table."""
    if part == "nodes" and isinstance(detail, dict) and isinstance(detail.get("nodes"), dict):
        return _node_lines(detail)
    if part == "config" and isinstance(detail, dict) and detail.get("restartNeeded"):
        changed = ", ".join(map(str, detail["restartNeeded"]))
        return [label_line("restart", f"needed for {changed} (the-loop stop && the-loop start)")]
    if isinstance(detail, dict) and detail and all(isinstance(v, int) for v in detail.values()):
        return [label_line(part, counts_text(detail) or "none")]
    if isinstance(detail, dict) and detail and all(isinstance(v, str) for v in detail.values()):
        return [label_line(part, ", ".join(f"{k} {v}" for k, v in detail.items()))]
    if isinstance(detail, dict) and detail and all(isinstance(v, dict) for v in detail.values()):
        return [label_line(part, "; ".join(f"{k} {readable(v)}" for k, v in detail.items()))]
    return [label_line(part, readable(detail))]


def _node_lines(detail: dict[str, Any]) -> list[str]:
    me = detail.get("self")
    after = detail.get("deadAfterSeconds")
    nodes: dict[str, Any] = detail["nodes"]
    head = f"{len(nodes)} on one database; this is {me}"
    if isinstance(after, int | float):
        head += f"; dead after {after:g} s without a heartbeat"
    rows = [["NODE", "STATE", "SESSIONS", "CAPACITY", "HEARTBEAT", "URL"]]
    now = time.time()
    for name, n in nodes.items():
        n = n if isinstance(n, dict) else {}
        state = "dead" if n.get("dead") else ("alive" if n.get("alive") else "silent")
        age = n.get("heartbeatAgeSeconds")
        rows.append(
            [
                f"{name} (this)" if name == me else str(name),
                state,
                str(n.get("sessions", "-")),
                readable(n.get("capacity")),
                ago(now - float(age), now) if isinstance(age, int | float) else "-",
                readable(n.get("url")),
            ]
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    table = [
        (
            " " * (_LABEL + 2) + "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True))
        ).rstrip()
        for r in rows
    ]
    return [label_line("nodes", head), *table]


def config_label(path: object) -> str:
    """The config file a daemon runs on, for people (None: the built-in defaults)."""
    if isinstance(path, str) and path:
        return path
    return "none: built-in defaults (`the-loop init` writes ./the-loop.yaml)"


def readable(value: object) -> str:
    """A JSON value for people, never a Python repr: ``-`` for nothing, ``k=v, …`` for an
    object (nested ones in parentheses, empty members left out), ``a, b`` for a list."""
    if value is None or value == [] or value == {}:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        parts = [
            f"{k}={_nested(v)}" for k, v in value.items() if v is not None and v != [] and v != {}
        ]
        return ", ".join(parts) or "-"
    if isinstance(value, list):
        return ", ".join(_nested(v) for v in value)
    return str(value)


def usage_text(used: dict[str, Any]) -> str:
    """A usage (as the output contract shows it) for people: turns, the cost (``unpriced``
    rather than a zero when no token has a price) and the tokens by kind."""
    cost = cost_text(used.get("costUsd"), bool(used.get("priced", True)), "$")
    missing = used.get("unpricedModels") or []
    text = (
        f"{used.get('turns', 0)} turns, {cost}"
        + (f" (no price for {', '.join(map(str, missing))})" if missing else "")
        + f"; tokens: {used.get('inputTokens', 0)} input, {used.get('outputTokens', 0)} output, "
        f"{used.get('cacheCreationTokens', 0)} cache-write, "
        f"{used.get('cacheReadTokens', 0)} cache-read"
    )
    models = used.get("models") or []
    return text + (f"; models: {', '.join(map(str, models))}" if models else "")


def _nested(value: object) -> str:
    text = readable(value)
    return f"({text})" if isinstance(value, dict | list) and len(value) > 1 else text


def _parse_iso(text: str) -> datetime:
    # the output contract's times (``wire.iso``): UTC with a ``Z``
    return datetime.fromisoformat(text.replace("Z", "+00:00"))
