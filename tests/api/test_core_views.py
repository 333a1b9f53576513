"""The core functions the surfaces call: one object per view, the same on the CLI, REST, MCP
and the SDK; status and metrics figures from the core; inbox replay from the core."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.mcp.test_mcp import over_http, structured
from tests.work import Work
from the_loop import TheLoop
from the_loop.context import open_ctx
from the_loop.errors import BadInput, NotFound
from the_loop.intake import ops as inbox_ops
from the_loop.intake.ops import ReplayOutcome
from the_loop.views import metrics
from the_loop.views import sessions as views
from the_loop.views.status import status_now

REF = "github:octo/repo#15"


def _started(daemon: Daemon) -> str:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "views-1")
    assert r.status_code == 202
    wait_until(lambda: daemon.api("GET", "/status").json()["inbox"].get("succeeded"), timeout=20)
    return str(daemon.api("GET", "/sessions").json()[0]["id"])


async def test_a_session_view_is_one_object_on_cli_rest_mcp_and_core(daemon: Daemon) -> None:
    sid = _started(daemon)
    daemon.work.wait_prompts(sid, 1)
    via_api = daemon.api("GET", f"/sessions/{sid}").json()
    via_cli = json.loads(daemon.work.cli("sessions", "show", sid, "--format", "json").stdout)
    async with over_http(daemon.url, daemon.token) as client:
        via_mcp = structured(await client.call_tool("get_session", {"session": REF}))
        screen = structured(await client.call_tool("read_session_screen", {"session": REF}))
    ctx = open_ctx(daemon.work.env.config_path)
    via_core = views.session_view(ctx, REF).model_dump(mode="json", by_alias=True)
    assert via_api == via_cli == via_mcp == via_core
    assert via_api["pane"] == "live" and via_api["deliveries"] == 1
    core_screen = views.session_screen(ctx, sid, 200)
    assert screen["sessionId"] == core_screen.session_id == sid and screen["lines"] == 200
    sdk = TheLoop(daemon.work.env.config_path)
    assert sdk.sessions.screen(REF) == views.session_screen(ctx, REF).text


def test_status_report_and_metrics_figures_are_what_the_api_serves(daemon: Daemon) -> None:
    sid = _started(daemon)
    daemon.work.wait_prompts(sid, 1)
    ctx = open_ctx(daemon.work.env.config_path)
    summary = asyncio.run(status_now(ctx))
    served = daemon.api("GET", "/status").json()
    expected = summary.model_dump(mode="json", by_alias=True)
    memory = served.pop("memory"), expected.pop("memory")  # figures move between two looks
    assert served == expected
    assert [a["agent"] for a in memory[0]["agents"]] == [a["agent"] for a in memory[1]["agents"]]
    assert memory[0]["liveAgents"] == 1 and sid in [a["agent"] for a in memory[0]["agents"]]
    assert summary.sessions == {"active": 1} and summary.health.ok and summary.healthy
    assert summary.pid == daemon.proc.pid if daemon.proc else False
    found = metrics.figures(ctx)
    assert found.sessions == {"queued": 0, "active": 1, "paused": 0, "closed": 0, "orphaned": 0}
    assert found.deliveries == 1 and found.inbox["succeeded"] == 1
    text = metrics.prometheus_text(ctx)
    auth = {"Authorization": f"Bearer {daemon.token}"}
    served_metrics = httpx.get(f"{daemon.url}/metrics", headers=auth, timeout=30).text
    served = daemon.api("GET", "/health").json()
    assert served == summary.health.model_dump(mode="json", by_alias=True)
    for line in (
        'the_loop_sessions{status="active"} 1',
        "the_loop_deliveries_total 1",
        'the_loop_inbox{status="succeeded"} 1',
        f"the_loop_poll_cycles_total {found.poll_cycles}",
    ):
        assert line in text
        assert line in served_metrics


def test_standing_view_refuses_bad_and_unknown_names(work: Work) -> None:
    work.configure(standing={"sessions": [{"name": "sup", "autoStart": False}]})
    ctx = open_ctx(work.env.config_path)
    with pytest.raises(BadInput):
        views.standing_view(ctx, "Not A Name")
    with pytest.raises(NotFound):
        views.standing_view(ctx, "nope")
    one = views.standing_view(ctx, "sup")
    assert one.name == "sup" and one.status.value == "absent"
    assert TheLoop(work.env.config_path).standing.get("sup") == one


def test_inbox_replay_processes_here_without_a_daemon(work: Work) -> None:
    work.env.write_config(
        routing={"defaultHarness": "claude", "authorizedUsers": ["alice"]},
        harnesses={"claude": {"binary": "/nonexistent/claude"}},
    )
    failed = work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "d-fail")
    assert failed.exit_code == 1
    ctx = open_ctx(work.env.config_path)
    with pytest.raises(NotFound):
        inbox_ops.replay(ctx, "nope")
    work.configure()
    done = inbox_ops.replay(open_ctx(work.env.config_path), "d-fail")
    assert done.outcome is ReplayOutcome.processed and done.status == "succeeded", done
    assert done.error is None
