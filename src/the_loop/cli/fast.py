"""The fast path of the read-only commands people run most: ``sessions list``, ``events``,
``status`` and ``standing list``, answered without typer, pydantic or the config models
(docs/decisions/0033).

A command takes this path only when everything it needs is known to be exactly what the full
CLI would use: the arguments are a form this module understands (anything else — help, an
unknown or invalid option, ``--follow``, ``--since``, JSON for ``sessions list`` — goes to the
full CLI, which also says what is wrong), the config file's facts were stored by the full CLI
for these very bytes (``the_loop.cli_facts``), the store is SQLite and every migration of this
version is applied. Otherwise ``run`` answers None and the caller runs the full CLI, which
validates the config, migrates, and stores the facts for next time.

What is printed goes through the same renderers as the full CLI (``cli.plain``,
``wire_text``) from the same queries (``store.rows``); ``tests/core/test_cli_fast.py`` runs
both paths over one state and compares their output byte for byte. The output is built
first and printed at the end, so a fall-back never prints twice.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from the_loop.cli import plain
from the_loop.cli.flags import leading
from the_loop.cli_facts import facts_key, read_facts, resolve_config_path
from the_loop.errors import LoopError
from the_loop.pricing import Rates, cost_text, rates_of, tally
from the_loop.private_cache import digest
from the_loop.store import attention as attention_store
from the_loop.store import rows
from the_loop.store.migrations import MIGRATIONS
from the_loop.wire_text import iso, json_text

DISABLE_ENV = "THE_LOOP_NO_FAST_PATH"
"""Set to 1 to send every command down the full CLI (the tests compare both paths)."""

Answer = tuple[str, int]
"""What a command prints on stdout, and its exit code."""


class _Unsure(Exception):
    """This path cannot answer exactly as the full CLI would: the full CLI answers."""


def run(args: list[str]) -> int | None:
    """Answer ARGS on the fast path (print, return the exit code), or None for the full CLI."""
    if os.environ.get(DISABLE_ENV) == "1":
        return None
    try:
        config, command = _globals(args)
        handler = _COMMANDS.get(tuple(command[:2])) or _COMMANDS.get(tuple(command[:1]))
        if handler is None:
            return None
        words = 2 if tuple(command[:2]) in _COMMANDS else 1
        options = command[words:]
        facts = _facts(config)
        text, code = handler(_State(facts), options)
    except (_Unsure, LoopError, OSError, sqlite3.Error, ValueError, KeyError, TypeError):
        return None
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        pass
    return code


def _globals(args: list[str]) -> tuple[Path | None, list[str]]:
    """The ``--config`` given before the command, and the command's words."""
    found = leading(args)
    if found is None or found.debug:
        raise _Unsure("flags before the command")  # --debug, --help, …: the full CLI
    return (Path(found.config) if found.config is not None else None), found.words


def _facts(explicit: Path | None) -> dict[str, Any]:
    path = resolve_config_path(explicit)
    raw = b"" if path is None else path.read_bytes()
    facts = read_facts(facts_key(path, raw))
    if facts is None or facts.get("databaseUrl"):
        raise _Unsure("no facts for this config, or not SQLite")
    # which config the daemon's answers must have been computed under (``standing list``)
    return {
        **facts,
        "configDigest": "defaults" if path is None else digest(raw),
        "configPath": None if path is None else str(path.absolute()),
    }


class _State:
    """The state dir and database of the facts, opened on first use."""

    def __init__(self, facts: dict[str, Any]) -> None:
        self.facts = facts
        self.dir = Path(str(facts["stateDir"])).expanduser().absolute()
        self._conn: sqlite3.Connection | None = None

    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            path = self.dir / "the-loop.db"
            if not path.is_file():
                raise _Unsure("no database yet")
            conn = sqlite3.connect(path, timeout=5)
            if rows.migration_names(conn) != sorted(name for name, _ in MIGRATIONS):
                conn.close()
                raise _Unsure("migrations pending")
            self._conn = conn
        return self._conn

    def rates(self, model: str) -> Rates | None:
        own = {
            name: (float(p[0]), float(p[1]), float(p[2]), float(p[3]))
            for name, p in (self.facts.get("prices") or {}).items()
        }
        return rates_of(model, own, bool(self.facts.get("defaultPrices", True)))


def _options(
    options: list[str], known: dict[str, str], repeated: frozenset[str] = frozenset()
) -> dict[str, list[str]]:
    """OPTIONS as {long name: values}, each flag of KNOWN (flag → long name) taking a value;
    anything else is not for this path."""
    out: dict[str, list[str]] = {}
    rest = list(options)
    while rest:
        word = rest.pop(0)
        flag, eq, value = word.partition("=")
        name = known.get(flag)
        if name is None or (eq and not flag.startswith("--")):
            raise _Unsure(word)
        if not eq:
            if not rest:
                raise _Unsure(word)
            value = rest.pop(0)
        if name in out and name not in repeated:
            raise _Unsure(f"{name} twice")
        out.setdefault(name, []).append(value)
    return out


def _limit(text: str, most: int) -> int:
    if not text.isdigit() or not 1 <= int(text) <= most:
        raise _Unsure(text)
    return int(text)


# --- sessions list ---------------------------------------------------------------------------

_STATUSES = ("queued", "active", "paused", "orphaned", "closed")


def _sessions_list(state: _State, options: list[str]) -> Answer:
    given = _options(options, {"--status": "status", "--limit": "limit", "--format": "format"})
    status = given.get("status", [None])[0]
    if status is not None and status not in _STATUSES:
        raise _Unsure(status)
    if given.get("format", ["table"])[0] != "table":
        raise _Unsure("only the table")
    limit = _limit(given.get("limit", ["100"])[0], sys.maxsize)
    conn = state.conn()
    found = rows.session_rows(conn, status, limit)
    ids = [str(r[0]) for r in found]
    used = rows.sums_of_agents(conn, ids)
    seen = {row.agent: row.state for row in attention_store.rows(conn, ids)}
    lines: list[plain.SessionLine] = []
    for r in found:
        rec = dict(zip(rows.SESSION_NAMES, r, strict=True))
        spent = tally(used.get(str(rec["id"]), []), state.rates)
        recorded = seen.get(str(rec["id"]))
        live = rec["status"] in rows.LIVE
        attention = "-" if recorded is None else (recorded if live else attention_store.EXITED)
        lines.append(
            (
                str(rec["work_item"]),
                str(rec["status"]),
                attention,
                str(rec["harness"]),
                str(rec["runner"]),
                rec["tmux_target"],
                spent.turns,
                cost_text(spent.cost_usd, spent.priced),
                float(rec["created_at"]),
                float(rec["last_event_at"]),
            )
        )
    return _captured(lambda: plain.print_sessions(lines, status)), 0


# --- events ----------------------------------------------------------------------------------


def _events(state: _State, options: list[str]) -> Answer:
    given = _options(
        options,
        {
            "--limit": "limit",
            "-n": "limit",
            "--format": "format",
            "--type": "type",
            "-t": "type",
            "--level": "level",
        },
        repeated=frozenset({"type"}),
    )
    fmt = given.get("format", ["table"])[0]
    if fmt not in ("table", "json", "jsonl"):
        raise _Unsure(fmt)
    level = given.get("level", ["debug"])[0]
    flt = rows.EventFilter(
        types=tuple(given.get("type", [])),
        min_level=rows.Level.parse(level),
        limit=_limit(given.get("limit", ["50"])[0], 100_000),
    )
    found = rows.newest_event_rows(state.conn(), flt)
    events = [_event(r) for r in found]
    if fmt == "json":
        return json_text(events) + "\n", 0
    if fmt == "jsonl":
        return "".join(json_text(e, indent=None) + "\n" for e in events), 0
    if not events:
        return _captured(
            lambda: plain.print_empty(
                "events match", "drop a filter, or watch new ones with --follow"
            )
        ), 0
    lines = []
    for row, e in zip(found, events, strict=True):
        subject = e["workItem"] or (f"standing:{e['standing']}" if e["standing"] else "-")
        moment = datetime.fromtimestamp(row[1], tz=UTC)
        lines.append(plain.event_line(moment, e["level"], e["type"], subject, e["payload"]))
    return "".join(line + "\n" for line in lines), 0


def _event(row: tuple[Any, ...]) -> dict[str, Any]:
    """An event row as the output contract shows an event (``store.events.Event``)."""
    payload = json.loads(row[9])
    if not isinstance(payload, dict):
        raise _Unsure("a payload that is not an object")
    out: dict[str, Any] = {
        "id": row[0],
        "ts": iso(datetime.fromtimestamp(row[1], tz=UTC)),
        "type": row[2],
        "level": rows.level_name(row[3]),
        "source": row[4],
        "workItem": row[5],
        "standing": row[6],
        "sessionId": row[7],
        "deliveryId": row[8],
        "payload": payload,
    }
    return out


# --- status ----------------------------------------------------------------------------------


def _status(state: _State, options: list[str]) -> Answer:
    fmt = _options(options, {"--format": "format"}).get("format", ["table"])[0]
    if fmt not in ("table", "json"):
        raise _Unsure(fmt)
    report = _report(state)
    if report.get("running") and report.get("configPath") != state.facts["configPath"]:
        raise _Unsure("the daemon runs on another config: the full CLI says so")
    code = 0 if report.get("healthy") else 1
    if fmt == "json":
        return json_text(report) + "\n", code
    return plain.status_text(report) + "\n", code


def _report(state: _State) -> dict[str, Any]:
    """The daemon's own status report when it answers, as ``status_client.status_report``;
    anything else (not running, no answer) is left to the full CLI, which says why."""
    report = _ask(state, "/api/v1/status")[1]
    if not isinstance(report, dict) or not isinstance(report.get("health"), dict):
        raise _Unsure("not a status report")
    return report


def _ask(state: _State, path: str) -> tuple[dict[str, str], Any]:
    """The headers and JSON of the running daemon's 200 answer to GET PATH; ``_Unsure`` when
    no daemon runs or it answers anything else."""
    from the_loop import local_client  # lazy: start-up (only these commands ask the daemon)

    if not local_client.daemon_running(state.dir):
        raise _Unsure("no daemon: the full CLI reads the database")
    info = json.loads((state.dir / local_client.INFO_NAME).read_text("utf-8"))
    token = local_client.local_token(str(state.facts["tokenEnv"]), state.dir)
    status, headers, body = local_client.fetch(str(info["url"]), path, token, 2.0)
    if status != 200:
        raise _Unsure(f"HTTP {status}")
    return headers, json.loads(body.decode("utf-8"))


# --- standing list ---------------------------------------------------------------------------


def _standing_list(state: _State, options: list[str]) -> Answer:
    """The running daemon's list (its tmux probes and the database), when the daemon runs on
    the very config this command would read (a daemon yet to reload an edit, or one keeping
    its config over an invalid edit, is left to the full CLI)."""
    if _options(options, {"--format": "format"}).get("format", ["table"])[0] != "table":
        raise _Unsure("only the table")
    from the_loop.local_client import CONFIG_HEADER  # lazy: start-up (light; with `_ask`)

    headers, views = _ask(state, "/api/v1/standing")
    if headers.get(CONFIG_HEADER.lower()) != state.facts["configDigest"]:
        raise _Unsure("the daemon runs on another config")
    if not isinstance(views, list) or not all(isinstance(v, dict) for v in views):
        raise _Unsure("not a list of standing sessions")
    return _captured(lambda: plain.print_standing(views)), 0


def _captured(printer: Callable[[], None]) -> str:
    """What PRINTER prints on stdout (the renderers print; this path prints once, at the end)."""
    buffer = io.StringIO()
    real = sys.stdout
    sys.stdout = _Tty(buffer, real)
    try:
        printer()
    finally:
        sys.stdout = real
    return buffer.getvalue()


class _Tty(io.TextIOBase):
    """A buffer that answers ``isatty`` and ``fileno`` as the real stdout does, so the renderers
    choose colour and layout for where the text will go."""

    def __init__(self, buffer: io.StringIO, real: Any) -> None:
        self._buffer, self._real = buffer, real

    def write(self, text: str) -> int:
        return self._buffer.write(text)

    def isatty(self) -> bool:
        return bool(self._real.isatty())

    def fileno(self) -> int:
        return int(self._real.fileno())


_COMMANDS: dict[tuple[str, ...], Callable[[_State, list[str]], Answer]] = {
    ("sessions", "list"): _sessions_list,
    ("events",): _events,
    ("status",): _status,
    ("standing", "list"): _standing_list,
}
