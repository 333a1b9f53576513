"""``the-loop serve|start|stop|status``: the daemon's lifecycle."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import typer

from the_loop.cli import common, serve_cmd
from the_loop.cli.plain import config_label, detail_lines, label_line, status_text
from the_loop.errors import Unavailable

if TYPE_CHECKING:
    from the_loop.context import Ctx


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("start")(start)
    app.command("stop")(stop)
    app.command("status")(status)


def serve() -> None:
    """Run the daemon in the foreground.

    For systemd, containers and `make run`; Ctrl-C or SIGTERM stops it.
    """
    serve_cmd.serve()


def start(
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds to wait for health."),
) -> None:
    """Start the daemon in the background; wait until it is healthy.

    Exits 0 with "already running" when the daemon of this state dir runs.
    """
    # lazy: start-up
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


def stop(
    keep_standing: bool = typer.Option(
        False, "--keep-standing", help="Leave the standing sessions running."
    ),
    timeout: float = typer.Option(
        10.0, "--timeout", help="Seconds to wait for a graceful exit before SIGKILL."
    ),
) -> None:
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
        raise typer.Exit(1)
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


def status(
    fmt: common.Format = typer.Option(common.Format.table, "--format", help="table or json"),
) -> None:
    """Report whether the daemon runs and is healthy.

    Exits 0 when healthy, 1 otherwise.
    """
    from the_loop.status_client import status_report  # lazy: start-up

    ctx = common.ctx()
    report = status_report(ctx)
    if fmt is common.Format.json:
        common.print_json(report)
    else:
        print(status_text(report.model_dump(mode="json")))
        mine = str(ctx.loaded.path.absolute()) if ctx.loaded.path else None
        if report.running and report.config_path != mine:
            common.print_warning(
                f"this command reads {config_label(mine)}, but the daemon runs on "
                f"{config_label(report.config_path)}; restart it to use the same file: "
                "the-loop stop && the-loop start",
                sys.stdout,
            )
    raise typer.Exit(0 if report.healthy else 1)
