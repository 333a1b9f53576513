"""``the-loop serve``: the daemon in the foreground, with the invocation's config. The daemon's
process loads click and the daemon, nothing else of the CLI (no Rich: a table or spinner is
never shown here)."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from the_loop.cli import common
from the_loop.cli.plain import config_label

if TYPE_CHECKING:
    from the_loop.context import Ctx


def serve() -> None:
    """Run the daemon in the foreground with the invocation's config (``common.STATE``)."""
    # lazy: start-up (the web stack loads only in the daemon)
    from the_loop.daemon.serve import serve as run_serve

    ctx = common.ctx()

    def banner(url: str) -> None:
        config = config_label(str(ctx.loaded.path.absolute()) if ctx.loaded.path else None)
        print(
            f"the-loop is serving on {url}\n"
            f"  health:    {url}/healthz (no token needed)\n"
            f"  api:       {url}/api/v1 ({token_hint(ctx)})\n"
            f"  state:     {ctx.state_dir}\n"
            f"  config:    {config}\n"
            f"  events:    the-loop events --follow\n"
            "press Ctrl-C to stop",
            file=sys.stderr,
            flush=True,
        )
        for warning in ctx.config.warnings():
            common.print_warning(warning)

    run_serve(ctx, banner=banner)


def token_hint(ctx: Ctx) -> str:
    """Where a client finds the API token: its environment variable, else the generated file."""
    token_env = ctx.config.server.token_env
    if os.environ.get(token_env):
        return f"Authorization: Bearer ${token_env}"
    return f"Authorization: Bearer $(cat {ctx.state_dir / 'api-token'})"
