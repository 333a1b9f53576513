"""``the-loop mcp``: the MCP server over stdio, for agent CLIs that launch it themselves."""

from __future__ import annotations

from the_loop.cli import common
from the_loop.cli.base import command


@command("mcp")
def mcp() -> None:
    """Serve MCP over stdio, for agent CLIs that launch it.

    For example: `claude mcp add the-loop -- the-loop mcp`. The tools act on the
    installation the config names, like every other command; the
    daemon need not run. Runs until stdin closes.
    """
    # lazy: start-up
    import anyio

    from the_loop.web.mcp import build_server

    ctx = common.ctx()
    anyio.run(build_server(lambda: ctx).run_stdio_async)
