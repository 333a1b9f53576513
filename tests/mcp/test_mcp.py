"""MCP with the official SDK's client: over HTTP at the daemon's /mcp (bearer tokens, the
loopback Host guard) and over stdio (`the-loop mcp`); tools reach the real fake agent."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import httpx2
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

DOCUMENTED = {
    "list_attention",
    "list_sessions",
    "get_session",
    "say_to_session",
    "read_session_screen",
    "list_standing_sessions",
    "get_standing_session",
    "say_to_standing_session",
    "query_events",
}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


@contextlib.asynccontextmanager
async def over_http(url: str, token: str, mode: str = "auto") -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client,
    ):
        yield client


def over_stdio(work: Work) -> Client:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "the_loop", "mcp"],
        env=work.env.process_env(),
        cwd=str(work.env.root),
    )
    return Client(params)


async def tool_names(client: Client) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


def structured(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def error_text(result: Any) -> str:
    assert result.is_error, result
    return "\n".join(block.text for block in result.content)


def create_standing(work: Work, name: str) -> str:
    made = work.cli("standing", "create", name, "--prompt", "my brief")
    assert made.exit_code == 0, made.stdout + made.stderr
    rows = json.loads(work.cli("standing", "list", "--format", "json").stdout)
    conversation = next(row["conversationId"] for row in rows if row["name"] == name)
    assert isinstance(conversation, str)
    return conversation


def test_the_documented_tools_are_exactly_the_served_ones() -> None:
    from the_loop.web.mcp import TOOLS

    assert set(TOOLS) == DOCUMENTED
    text = DOCS.read_text()
    for name in DOCUMENTED:
        assert f"`{name}`" in text, name
    for verb in ("create", "delete", "close", "stop"):
        assert not any(verb in name for name in TOOLS)


async def test_http_needs_a_token_and_lists_exactly_the_tools(daemon: Daemon) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    bare = httpx.post(f"{daemon.url}/mcp", json=init, timeout=10)
    assert bare.status_code == 401 and bare.json()["error"]["code"] == "unauthorized"
    wrong = httpx.post(f"{daemon.url}/mcp", json=init, headers={"Authorization": "Bearer x"})
    assert wrong.status_code == 401
    foreign = httpx.post(  # the first request let in loads the MCP SDK: seconds on a busy host
        f"{daemon.url}/mcp",
        json=init,
        headers={"Authorization": f"Bearer {daemon.token}", "Host": "evil.example:80"},
        timeout=60,
    )
    assert foreign.status_code == 421
    async with over_http(daemon.url, daemon.token) as client:
        assert await tool_names(client) == DOCUMENTED
        assert structured(await client.call_tool("list_sessions", {})) == {"result": []}
        missing = error_text(await client.call_tool("get_session", {"session": "nope"}))
        assert "not_found: no session 'nope'" in missing and "Traceback" not in missing
    openapi = daemon.api("GET", "/openapi.json").json()
    assert not any(path.endswith("/mcp") for path in openapi["paths"])


async def test_http_sessions_tools_reach_the_agent(daemon: Daemon) -> None:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "mcp-1")
    assert r.status_code == 202
    wait_until(
        lambda: daemon.api("GET", "/status").json()["inbox"].get("succeeded"),
        timeout=20,
        what="the spawn",
    )
    sid = daemon.api("GET", "/sessions").json()[0]["id"]
    async with over_http(daemon.url, daemon.token) as client:
        listed = structured(await client.call_tool("list_sessions", {}))["result"]
        assert listed == daemon.api("GET", "/sessions").json()
        one = structured(await client.call_tool("get_session", {"session": "github:octo/repo#15"}))
        assert one["id"] == sid and one["pane"] == "live"
        said = await client.call_tool("say_to_session", {"session": sid, "text": "from mcp"})
        assert structured(said)["ok"] is True
        assert "from mcp" in daemon.work.wait_prompts(sid, 2)[1]
        screen = structured(await client.call_tool("read_session_screen", {"session": sid}))
        assert screen["sessionId"] == sid
        events = await client.call_tool("query_events", {"types": ["session.*"], "limit": 5})
        assert structured(events)["result"][0]["type"] == "session.spawned"
        bad = error_text(await client.call_tool("query_events", {"since": "soon"}))
        assert bad.endswith(
            "bad_input: invalid --since 'soon': use 30s, 15m, 2h, 1d or an ISO time"
        )


async def test_http_say_to_standing_reaches_the_agent_and_read_only_cannot(work: Work) -> None:
    work.configure(github={"enabled": True})
    daemon = Daemon(work)
    daemon.start(THE_LOOP_READONLY_TOKEN="ro-token-mcp")
    try:
        conversation = create_standing(work, "probe")
        for mode in ("auto", "legacy"):
            async with over_http(daemon.url, "ro-token-mcp", mode) as client:
                assert await tool_names(client) == DOCUMENTED
                view = structured(await client.call_tool("get_standing_session", {"name": "probe"}))
                assert view["status"] == "running" and view["conversationId"] == conversation
                refused = await client.call_tool(
                    "say_to_standing_session", {"name": "probe", "text": "sneaky"}
                )
                assert "forbidden: the read-only token cannot change" in error_text(refused)
        async with over_http(daemon.url, daemon.token) as client:
            args = {"name": "probe", "text": "hello from mcp", "actor": "claude"}
            said = structured(await client.call_tool("say_to_standing_session", args))
            assert said["name"] == "probe" and said["conversationId"] == conversation
            listed = structured(await client.call_tool("list_standing_sessions", {}))["result"]
            assert [row["name"] for row in listed] == ["probe"]
        texts = work.wait_prompts(conversation, 2)
        assert "Message from claude to standing session `probe`" in texts[1]
        assert texts[1].endswith("hello from mcp") and not any("sneaky" in t for t in texts)
    finally:
        daemon.stop()


async def test_stdio_lists_exactly_the_tools_and_says_to_standing(work: Work) -> None:
    conversation = create_standing(work, "helper")
    async with over_stdio(work) as client:
        assert await tool_names(client) == DOCUMENTED
        args = {"name": "helper", "text": "over stdio"}
        said = structured(await client.call_tool("say_to_standing_session", args))
        assert said["actor"] == "mcp"
        stopped = error_text(await client.call_tool("get_standing_session", {"name": "nobody"}))
        assert "not_found: no standing session 'nobody'" in stopped
    assert work.wait_prompts(conversation, 2)[1].endswith("over stdio")
    work.cli("standing", "stop", "helper")


def test_the_host_guard_is_on_for_loopback_and_admits_the_public_url() -> None:
    from the_loop.web.mcp import transport_security

    local = transport_security("127.0.0.1", "https://loop.example.org")
    assert local.enable_dns_rebinding_protection
    assert "loop.example.org" in local.allowed_hosts and "localhost:*" in local.allowed_hosts
    assert "https://loop.example.org" in local.allowed_origins
    assert not transport_security("0.0.0.0").enable_dns_rebinding_protection
    assert not transport_security(None).enable_dns_rebinding_protection
