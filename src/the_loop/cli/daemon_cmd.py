"""``the-loop serve|start|stop|status``: the daemon's lifecycle."""

from __future__ import annotations

import os
import sys

import typer

from the_loop.cli import common


def register(app: typer.Typer) -> None:
    app.command("serve")(serve)
    app.command("start")(start)
    app.command("stop")(stop)
    app.command("status")(status)


def serve() -> None:
    """Run the daemon in the foreground.

    For systemd, containers and `make run`; Ctrl-C or SIGTERM stops it.
    """
    # lazy: start-up
    from the_loop.daemon import serve as run_serve

    ctx = common.ctx()

    def banner(url: str) -> None:
        print(
            f"the-loop is serving on {url}\n"
            f"  dashboard: {url}/\n"
            f"  health:    {url}/api/v1/health\n"
            f"  state:     {ctx.state_dir}\n"
            f"  events:    the-loop events --follow\n"
            "press Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        for warning in ctx.config.warnings():
            print(f"warning: {warning}", file=sys.stderr, flush=True)

    run_serve(ctx, banner=banner)


def start(
    timeout: float = typer.Option(30.0, "--timeout", help="Seconds to wait for health."),
) -> None:
    """Start the daemon in the background and wait until it is healthy."""
    # lazy: start-up
    from the_loop.daemon import start_detached

    ctx = common.ctx()
    if sys.stderr.isatty():
        # lazy: start-up
        from rich.console import Console

        with Console(stderr=True).status("starting the-loop…"):
            health = start_detached(ctx, timeout=timeout)
    else:
        health = start_detached(ctx, timeout=timeout)
    print(f"the-loop is running at {health.url} (pid {health.pid})")
    for part, detail in health.detail.items():
        print(f"  {part + ':':<9}{_describe(detail)}")
    # lazy: start-up
    from the_loop.web.auth import client_token

    if client_token(ctx) and not os.environ.get(ctx.config.server.token_env):
        print(f"  token:   {ctx.state_dir / 'api-token'} (Authorization: Bearer …)")
    for problem in health.problems:
        print(f"warning: {problem}")


def stop(
    keep_standing: bool = typer.Option(
        False, "--keep-standing", help="Leave standing sessions running."
    ),
    timeout: float = typer.Option(10.0, "--timeout", help="Seconds to wait for shutdown."),
) -> None:
    """Stop the daemon gracefully; agents in tmux keep running."""
    # lazy: start-up
    from the_loop.daemon import stop_daemon

    ctx = common.ctx()
    if not keep_standing:
        # lazy: start-up
        from the_loop import standing

        for outcome in standing.stop_all(ctx):
            print(
                f"standing {outcome.name}: {outcome.outcome.value}"
                f"{f' ({outcome.error})' if outcome.error else ''}"
            )
    if stop_daemon(ctx.state_dir, timeout=timeout):
        print("the-loop stopped")
    else:
        print("the-loop is not running")


def status(
    fmt: common.Format = typer.Option(common.Format.table, "--format", help="table or json"),
) -> None:
    """Report whether the daemon runs and is healthy.

    Exits 0 when healthy, 1 otherwise.
    """
    # lazy: start-up
    from the_loop.daemon import probe_health

    health = probe_health(common.ctx())
    if fmt is common.Format.json:
        common.print_json(health.model_dump(mode="json"))
    else:
        state = "healthy" if health.healthy else ("unhealthy" if health.running else "stopped")
        print(f"the-loop: {state}")
        if health.running:
            print(
                f"  url:     {health.url}\n  pid:     {health.pid}\n"
                f"  version: {health.version}\n  uptime:  {health.uptime_seconds}s"
            )
        for part, detail in health.detail.items():
            print(f"  {part + ':':<9}{_describe(detail)}")
        for problem in health.problems:
            print(f"  problem: {problem}")
    raise typer.Exit(0 if health.healthy else 1)


def _describe(detail: object) -> str:
    if isinstance(detail, dict):
        return ", ".join(f"{k}={v}" for k, v in detail.items()) or "-"
    return str(detail)
