"""``the-loop serve|start|stop|status``: the daemon's lifecycle."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from the_loop.cli import common
from the_loop.cli.base import command
from the_loop.cli.plain import config_label, detail_lines, label_line, status_text
from the_loop.errors import Unavailable

if TYPE_CHECKING:
    from the_loop.context import Ctx
    from the_loop.views.health import StatusReport


@command("serve")
def serve() -> None:
    """Run the daemon in the foreground.

    For systemd, containers and `make run`; Ctrl-C or SIGTERM stops it.
    """
    from the_loop.cli import serve_cmd  # lazy: start-up

    serve_cmd.serve()


@command("start")
@click.option("--timeout", type=float, default=30.0, help="Seconds to wait for health.")
def start(timeout: float) -> None:
    """Start the daemon in the background; wait until it is healthy.

    Exits 0 with "already running" when the daemon of this state dir runs.
    """
    # lazy: start-up
    from the_loop.agent import egress
    from the_loop.daemon.serve import daemon_running, read_info, start_detached
    from the_loop.web.auth import check_bind

    ctx = common.ctx()
    ctx.loaded.require_valid_file()  # an invalid file is refused even when a daemon runs
    if daemon_running(ctx.state_dir):
        info = read_info(ctx.state_dir)
        where = f" at {info.url} (pid {info.pid})" if info else ""
        print(f"the-loop is already running{where}")
        return
    check_bind(ctx)  # a refused bind is the one message, before any warning
    for warning in ctx.config.warnings():
        common.print_warning(warning)
    if (unreachable := egress.unmirrored(ctx.config)) is not None:
        common.print_warning(unreachable)
    with common.waiting("starting the-loop…"):
        health = start_detached(ctx, timeout=timeout)
    print(f"the-loop is running at {health.url} (pid {health.pid})")
    for part, detail in health.detail.items():
        print("\n".join(detail_lines(part, detail)))
    # lazy: start-up
    from the_loop.web.auth import client_token

    if client_token(ctx) and not os.environ.get(ctx.config.server.token_env):
        print(label_line("token", f"{ctx.state_dir / 'api-token'} (Authorization: Bearer …)"))
    for problem in health.problems:
        common.print_warning(problem, sys.stdout)


@command("stop")
@click.option("--keep-standing", is_flag=True, help="Leave the standing sessions running.")
@click.option(
    "--timeout",
    type=float,
    default=10.0,
    help="Seconds to wait for a graceful exit before SIGKILL.",
)
def stop(keep_standing: bool, timeout: float) -> None:
    """Stop the daemon and the standing sessions.

    Standing sessions are stopped first (also when no daemon runs), unless --keep-standing;
    then the daemon finishes in-flight work and exits. Work-item agents in tmux keep running:
    they outlive the daemon. Returns once the daemon process has exited; exits 0 when nothing
    was running, 1 when the daemon had to be killed or would not exit.
    """
    # lazy: start-up
    from the_loop.daemon.serve import daemon_running, stop_daemon

    ctx = common.ctx()
    if not keep_standing:
        _stop_standing(ctx)
    with common.waiting("stopping the-loop…"):
        result = stop_daemon(ctx.state_dir, timeout=timeout)
    if not keep_standing and result.running:
        _stop_standing(ctx)  # the ones its auto-start was still starting meanwhile
    if not result.running:
        print("the-loop daemon is not running")
        return
    if not result.exited:
        raise Unavailable(
            f"the daemon (pid {result.pid}) did not exit within {timeout:g}s, "
            "not even after SIGKILL"
        )
    if result.killed:
        common.print_warning(
            f"the daemon (pid {result.pid}) did not stop within {timeout:g}s; killed it"
        )
        sys.exit(1)
    still = " (another daemon has taken the state dir)" if daemon_running(ctx.state_dir) else ""
    print(f"the-loop stopped (pid {result.pid}, {result.seconds:.1f}s){still}")


def _stop_standing(ctx: Ctx) -> None:
    # lazy: start-up
    from the_loop.standing import service as standing

    with common.waiting("stopping the standing sessions…"):
        outcomes = standing.stop_all(ctx)
    for outcome in outcomes:
        word = common.status_word(outcome.outcome.value)
        print(f"standing {outcome.name}: {word}" + (f" ({outcome.error})" if outcome.error else ""))


@command("status")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", help="table or json"
)
def status(fmt: str) -> None:
    """Report whether the daemon runs and is healthy.

    Exits 0 when healthy, 1 otherwise.
    """
    from the_loop.cli import remote  # lazy: start-up

    answer = remote.status()
    if isinstance(answer, dict):  # the running daemon's own report (docs/decisions/0065)
        report, mine = answer, remote.config_file()
    else:  # read here; a daemon that was asked and did not answer is not asked twice
        ctx = common.ctx()
        report = _status_report(ctx, unanswered=answer).model_dump(mode="json", by_alias=True)
        mine = str(ctx.loaded.path.absolute()) if ctx.loaded.path else None
    if fmt == "json":
        remote.print_json(report)
    else:
        print(status_text(report))
        theirs = report.get("configPath")
        if report.get("running") and theirs != mine:
            common.print_warning(
                f"this command reads {config_label(mine)}, but the daemon runs on "
                f"{config_label(theirs)}; restart it to use the same file: "
                "the-loop stop && the-loop start",
                sys.stdout,
            )
    sys.exit(0 if report.get("healthy") else 1)


def _status_report(ctx: Ctx, unanswered: str | None = None) -> StatusReport:
    """The status of CTX's installation when its daemon does not answer (or does not run): the
    sessions and inbox counts read from the state database; never raises. UNANSWERED: why the
    daemon, asked already, gave no answer (it is not asked again)."""
    # lazy: start-up
    from the_loop.instance import daemon_running, read_info
    from the_loop.views.health import StatusReport

    info = read_info(ctx.state_dir)
    if info is None or not daemon_running(ctx.state_dir):
        return _local(ctx, running=False, problem="the-loop is not running")
    problem = unanswered or ""
    try:
        # lazy: start-up (the token module of the web stack, only when a daemon runs)
        from the_loop.cli.remote import TIMEOUT
        from the_loop.instance import ask
        from the_loop.web.auth import client_token

        if not unanswered:
            code, body, _ = ask(info.url, "/api/v1/status", client_token(ctx), TIMEOUT)
            if code == 200:
                return StatusReport.model_validate_json(body)
            problem = f"the daemon's status endpoint answered HTTP {code}"
    except (OSError, ValueError) as exc:
        problem = f"the daemon does not answer at {info.url}: {exc}"
    report = _local(ctx, running=True, problem=problem)
    report.pid, report.url, report.version = info.pid, info.url, info.version
    report.started_at = info.started_at
    return report


def _local(ctx: Ctx, *, running: bool, problem: str) -> StatusReport:
    # lazy: start-up
    import sqlite3

    from the_loop import __version__
    from the_loop.errors import StateError
    from the_loop.views.counts import by_status
    from the_loop.views.health import Health, StatusReport

    problems = [problem]
    try:
        sessions, in_inbox = by_status(ctx)
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
