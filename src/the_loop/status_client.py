"""``the-loop status`` as a client: the daemon's own ``GET /api/v1/status`` when it runs, so the
CLI's JSON is the API's; otherwise a report built here saying it does not run, with the
sessions and inbox counts read from the state database.

Light on purpose (the HTTP client loads only when a daemon runs): ``status`` is a fast command.
"""

from __future__ import annotations

import sqlite3

from the_loop import __version__
from the_loop.context import Ctx
from the_loop.errors import StateError
from the_loop.instance import DaemonInfo, daemon_running, read_info
from the_loop.local_client import get
from the_loop.store import inbox
from the_loop.store.sessions import counts_by_status
from the_loop.views.health import Health, StatusReport


def ask_daemon(ctx: Ctx, info: DaemonInfo, path: str, timeout: float) -> tuple[int, bytes]:
    """GET PATH of the daemon INFO describes, with CTX's token: its HTTP status and body.

    The standard library's client: one question on loopback loads no HTTP client library (or
    the web stack), since ``status`` is a fast command. Raises ``OSError`` when the daemon does
    not answer."""
    # lazy: start-up (the token module loads only when a daemon runs)
    from the_loop.web.auth import client_token

    return get(info.url, path, client_token(ctx), timeout)


def status_report(ctx: Ctx, timeout: float = 2.0) -> StatusReport:
    """The status of CTX's installation; never raises for a daemon that does not answer."""
    info = read_info(ctx.state_dir)
    if info is None or not daemon_running(ctx.state_dir):
        return _local(ctx, running=False, problem="the-loop is not running")
    try:
        status, body = ask_daemon(ctx, info, "/api/v1/status", timeout)
        if status == 200:
            return StatusReport.model_validate_json(body)
        problem = f"the daemon's status endpoint answered HTTP {status}"
    except (OSError, ValueError) as exc:
        problem = f"the daemon does not answer at {info.url}: {exc}"
    report = _local(ctx, running=True, problem=problem)
    report.pid, report.url, report.version = info.pid, info.url, info.version
    report.started_at = info.started_at
    return report


def _local(ctx: Ctx, *, running: bool, problem: str) -> StatusReport:
    problems = [problem]
    try:
        sessions, in_inbox = counts_by_status(ctx.db.connect()), inbox.counts(ctx.db)
    except (StateError, sqlite3.Error) as exc:
        sessions, in_inbox = {}, {}
        problems.append(f"the state database fails: {exc}")
    return StatusReport(
        running=running,
        healthy=False,
        health=Health(status="unhealthy", version=__version__, problems=problems),
        sessions=sessions,
        inbox=in_inbox,
    )
