"""The daemon's app loads the MCP SDK (about 24 MB) on the first ``/mcp`` request, not before:
a fresh process builds the app and serves a REST request without it, refuses an
unauthenticated ``/mcp`` request without loading it, then an ``initialize`` over ``/mcp``
loads it and answers."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import Env

SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    import httpx
    from the_loop.context import open_ctx
    from the_loop.web.app import create_app
    from the_loop.web.auth import ensure_tokens

    ctx = open_ctx()
    app = create_app(ctx)
    token = ensure_tokens(ctx).full

    async def main():
        seen = []
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            headers = {"Authorization": f"Bearer {token}"}
            base = f"http://127.0.0.1:{ctx.config.server.port}"
            async with httpx.AsyncClient(transport=transport, base_url=base) as c:
                r = await c.get("/api/v1/sessions", headers=headers)
                seen.append([r.status_code, "mcp" in sys.modules])
                r = await c.post("/mcp", json={})  # no token: refused before anything loads
                seen.append([r.status_code, "mcp" in sys.modules])
                body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "1"}}}
                r = await c.post("/mcp", json=body, headers={
                    **headers, "Accept": "application/json, text/event-stream"})
                seen.append([r.status_code, "mcp" in sys.modules, "serverInfo" in r.text])
        print(json.dumps(seen))

    asyncio.run(main())
    """
)


def test_the_mcp_sdk_loads_on_the_first_mcp_request(loop_env: Env) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=loop_env.process_env(),
        cwd=loop_env.root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert (
        done.stdout.strip().splitlines()[-1] == "[[200, false], [401, false], [200, true, true]]"
    ), done.stdout
