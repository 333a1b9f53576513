"""``the-loop poll --once``: one poll cycle of the configured repositories."""

from __future__ import annotations

import sys

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option
from the_loop.errors import BadInput


@command("poll")
@click.option("--once", is_flag=True, default=True, help="Run one cycle and exit (the only mode).")
@format_option()
def poll(once: bool, fmt: str) -> None:
    """Poll GitHub once.

    Looks for new labelled items, comments, reviews and closures.
    """
    # lazy: start-up
    import asyncio

    from the_loop.intake.github_poller import CycleResult, Poller

    ctx = common.ctx()
    if not ctx.config.github.enabled:
        raise BadInput("github.enabled is false: nothing to poll")
    if not ctx.config.github.repos:
        raise BadInput("github.repos is empty: the poller needs the repositories to list")

    async def one() -> CycleResult:
        poller = Poller(ctx)
        try:
            return await poller.cycle()
        finally:
            await poller.client.aclose()

    with common.waiting("polling GitHub (a spawn may clone a repository)…"):
        result = asyncio.run(one())
    common.drain_outbox()
    repos = result.repos
    if fmt == "json":
        common.print_json(repos)
    else:
        common.print_table(
            ["REPO", "CALLS", "304", "DISPATCHED", "CLOSURES", "ERROR"],
            [
                (r.repo, r.calls, r.not_modified, r.dispatched, r.closures, r.error or "")
                for r in repos
            ],
        )
    sys.exit(0 if result.ok else 1)
