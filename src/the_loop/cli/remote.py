"""The read-only commands asked of the running daemon, which holds the validated config:
``sessions list``, ``events``, ``status`` and ``standing list`` (docs/decisions/0065).

The daemon is found without the config models: the config file this invocation reads
(``instance.resolve_config_path``) points at the state dir of the daemon last started on it,
whose record names the digest of the bytes it runs on (``instance.recorded``). Only when that
daemon runs, on exactly these bytes, is it asked (``GET /api/v1/…`` over ``http.client``);
its JSON is the API's, so ``--format json`` prints it as it came and a table renders it
through the same functions as the local path (``cli.plain``). Every other case — no daemon,
a file edited since it (re)loaded, an invalid file, no answer, any answer but 200 — returns
None, and the command reads the store itself with the config validated (which also gives the
error messages).

Light on purpose (the standard library and ``cli.plain``): these commands load neither
pydantic nor the config models when the daemon answers.
"""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any, NamedTuple
from urllib.parse import urlencode

from the_loop import instance
from the_loop.cli import common, plain
from the_loop.pricing import cost_text

TIMEOUT = 2.0
"""Seconds to wait for the daemon's answer before reading the store instead."""


class Daemon(NamedTuple):
    """The running daemon of this invocation's config, and how to ask it."""

    url: str
    token: str | None
    digest: str
    shared: bool
    """Several nodes may share its database (PostgreSQL): tables show the NODE column."""


def config_file() -> str | None:
    """The absolute path of the config file this invocation reads (None: all defaults)."""
    path = instance.resolve_config_path(common.STATE.config_path)
    return None if path is None else str(path.absolute())


def find() -> Daemon | None:
    """The daemon to ask, or None when none runs on exactly the config file this invocation
    reads (then the command reads the store itself)."""
    path = instance.resolve_config_path(common.STATE.config_path)
    try:
        digest = "defaults" if path is None else instance.config_digest(path.read_bytes())
    except OSError:
        return None
    found = instance.recorded(path)
    if found is None:
        return None
    state_dir, record = found
    if record.get("digest") != digest or not instance.daemon_running(state_dir):
        return None
    info = instance.read_info(state_dir)
    config = record["config"]
    try:
        token_env = str(config["server"]["tokenEnv"])
        shared = bool((config.get("database") or {}).get("url"))
    except (KeyError, TypeError, AttributeError):
        return None
    if info is None:
        return None
    return Daemon(info.url, instance.local_token(token_env, state_dir), digest, shared)


def ask(path: str, params: dict[str, Any] | None = None) -> tuple[Daemon, Any] | None:
    """The running daemon and its JSON answer to GET /api/v1/PATH?PARAMS, or None (see the
    module's docstring)."""
    answer = _ask(path, params)
    return None if isinstance(answer, str) else answer


def _ask(path: str, params: dict[str, Any] | None = None) -> tuple[Daemon, Any] | str | None:
    """``ask``, but why the daemon that was asked gave no answer (it did not answer within
    ``TIMEOUT``, or the connection failed) rather than None."""
    daemon = find()
    if daemon is None:
        return None
    query = {k: v for k, v in (params or {}).items() if v is not None and v != []}
    target = f"/api/v1/{path}" + (f"?{urlencode(query, doseq=True)}" if query else "")
    try:
        status, body, headers = instance.ask(daemon.url, target, daemon.token, TIMEOUT)
        if status != 200 or headers.get(instance.CONFIG_HEADER.lower(), daemon.digest) != (
            daemon.digest
        ):
            return None
        return daemon, json.loads(body)
    except OSError as exc:
        return f"the daemon does not answer at {daemon.url}: {exc}"
    except ValueError:
        return None


def print_json(data: Any) -> None:
    """DATA (plain JSON values, as the API answered them) as ``--format json`` prints it."""
    sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def _when(text: object) -> float:
    return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()


# --- the four commands ------------------------------------------------------------------------


def sessions(status: str | None, limit: int) -> tuple[Daemon, list[dict[str, Any]]] | None:
    """``GET /sessions``: work-item sessions, newest first."""
    answer = ask("sessions", {"status": status, "limit": limit})
    return answer if answer is not None and isinstance(answer[1], list) else None


def print_sessions(
    answer: tuple[Daemon, list[dict[str, Any]]], status: str | None, fmt: str
) -> None:
    daemon, views = answer
    if fmt == "json":
        print_json(views)
        return
    lines: list[plain.SessionLine] = []
    for v in views:
        used, attention = v.get("usage"), v.get("attention")
        lines.append(
            (
                str(v["workItem"]),
                str(v["status"]),
                str(attention["state"]) if attention else "-",
                str(v["harness"]),
                str(v["runner"]),
                v.get("tmuxTarget"),
                int(used["turns"]) if used else 0,
                cost_text(used.get("costUsd"), bool(used.get("priced", True))) if used else "-",
                _when(v["createdAt"]),
                _when(v["lastEventAt"]),
            )
        )
    nodes = [str(v.get("node") or "-") for v in views] if daemon.shared else None
    plain.print_sessions(lines, status, nodes=nodes)


def events(
    types: list[str],
    work_item: str | None,
    standing: str | None,
    level: str,
    since: str | None,
    limit: int,
) -> list[dict[str, Any]] | None:
    """``GET /events``: the events of a filter, newest last."""
    params = {
        "type": types,
        "workItem": work_item,
        "standing": standing,
        "level": level,
        "since": since,
        "limit": limit,
    }
    answer = ask("events", params)
    return answer[1] if answer is not None and isinstance(answer[1], list) else None


def print_events(events: list[dict[str, Any]], fmt: str) -> None:
    if fmt == "json":
        print_json(events)
        return
    if fmt == "jsonl":
        sys.stdout.write(
            "".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events)
        )
        return
    if not events:
        common.print_empty("events match", "drop a filter, or watch new ones with --follow")
        return
    out = []
    for e in events:
        subject = e.get("workItem") or (f"standing:{e['standing']}" if e.get("standing") else "-")
        moment = datetime.fromisoformat(str(e["ts"]).replace("Z", "+00:00"))
        out.append(plain.event_line(moment, e["level"], e["type"], subject, e["payload"]) + "\n")
    sys.stdout.write("".join(out))


def status() -> dict[str, Any] | str | None:
    """``GET /status``: the daemon's own status report; why it did not answer when it was
    asked (the caller reports that rather than asking again)."""
    answer = _ask("status")
    if answer is None or isinstance(answer, str):
        return answer
    return answer[1] if isinstance(answer[1], dict) else None


def standing() -> tuple[Daemon, list[dict[str, Any]]] | None:
    """``GET /standing``: declared and created standing sessions, read under this config."""
    answer = ask("standing")
    return answer if answer is not None and isinstance(answer[1], list) else None


def print_standing(answer: tuple[Daemon, list[dict[str, Any]]], fmt: str) -> None:
    daemon, views = answer
    if fmt == "json":
        print_json(views)
        return
    plain.print_standing(views, nodes=daemon.shared)
