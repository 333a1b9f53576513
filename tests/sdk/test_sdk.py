"""The SDK against real state: the same answers as the CLI, standing sessions reaching the fake
agent, and `mount` serving REST and MCP from a user's FastAPI app over real HTTP."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
import uvicorn
from fastapi import Depends, FastAPI, HTTPException, Request
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

from tests.attention.hooks import AGENT, hook_env, issue, output, permission, row, start_hook
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work, fake_harness
from the_loop import TheLoop
from the_loop.errors import BadInput, ConfigInvalid, Conflict, NotFound, NotRunning
from the_loop.views.health import StatusReport
from the_loop.views.sessions import SessionView
from the_loop.wire import to_wire
from the_loop.work_items.records import SessionSummary

REF = "github:octo/repo#15"


def test_public_names_and_import_stays_light() -> None:
    import the_loop
    from the_loop import sdk

    assert the_loop.__all__ == ["TheLoop", "__version__"]
    assert the_loop.TheLoop is sdk.TheLoop
    with pytest.raises(AttributeError):
        _ = the_loop.NoSuchThing  # type: ignore[attr-defined]
    heavy = "('fastapi', 'mcp', 'typer', 'starlette', 'the_loop.sdk')"
    probe = f"import sys, the_loop; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", (out.returncode, out.stdout, out.stderr)
    probe = "import sys; from the_loop import TheLoop; print('fastapi' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", (out.returncode, out.stdout, out.stderr)


def test_config_from_a_dict_a_model_or_a_file(loop_env: Env) -> None:
    from the_loop.config import Config

    by_dict = TheLoop(config={"stateDir": str(loop_env.state_dir), "tmux": {"socket": "x-1"}})
    assert by_dict.config.tmux.socket == "x-1" and by_dict.ctx.loaded.path is None
    by_model = TheLoop(config=Config(state_dir=loop_env.state_dir))
    assert by_model.config.state_path == loop_env.state_dir
    by_file = TheLoop(loop_env.config_path)
    assert by_file.config.tmux.socket == loop_env.socket
    with pytest.raises(ConfigInvalid) as bad:
        TheLoop(config={"stateDir": str(loop_env.state_dir), "server": {"port": -1}, "bogus": 1})
    assert sorted(bad.value.problems) == [
        "bogus: unknown key",
        "server.port: Input should be greater than or equal to 0",
    ]
    with pytest.raises(BadInput):
        TheLoop(loop_env.config_path, config={})


def test_sessions_match_the_cli_and_reach_the_agent(work: Work) -> None:
    result = work.dispatch("issue_comment", P.issue_comment_event("the-loop do fix it"), "s-1")
    assert result.exit_code == 0, result.stderr
    loop = TheLoop(work.env.config_path)
    via_cli = json.loads(work.cli("sessions", "list", "--format", "json").stdout)
    assert [r.model_dump(mode="json", by_alias=True) for r in loop.sessions.list()] == via_cli
    sid = loop.sessions.get(REF).id
    assert loop.sessions.list(status="closed") == []
    with pytest.raises(BadInput):
        loop.sessions.list(status="bogus")
    loop.sessions.say(REF, "hello from the sdk", actor="sdk-user")
    said = work.wait_prompts(sid, 2)[1]
    assert "Message from sdk-user (operator)" in said and "hello from the sdk" in said
    wait_until(lambda: "FAKE-AGENT GOT" in loop.sessions.screen(sid), what="the screen")
    assert loop.sessions.pause(sid).status == "paused"
    assert loop.sessions.resume(sid).status == "active"
    closed = loop.sessions.close(REF, kill_tmux=True)
    assert closed.status == "closed" and closed.close_reason == "operator"
    with pytest.raises(NotRunning):
        loop.sessions.say(sid, "too late")
    with pytest.raises(NotFound):
        loop.sessions.get("nope")
    types = [e.type for e in loop.events.query(types=["session.*"], work_item=REF, limit=100)]
    assert types[0] == "session.spawned" and "session.closed" in types
    assert any(spec.name == "standing.said" for spec in loop.events.types())


def test_a_permission_is_answered_through_the_sdk_by_its_prompt_id(
    loop_env: Env, daemon: Daemon
) -> None:
    """An operator's script answers like ``the-loop allow ID``: the waiting hook gets the
    decision, the answer is recorded ``via sdk`` by the actor given, and a second one is
    stale."""
    hook = start_hook(
        hook_env(loop_env, issue(loop_env, work_item="local:deploy")), permission("make deploy")
    )
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt, 20, what="the prompt")
    loop = TheLoop(loop_env.config_path)
    assert loop.attention.explain(AGENT).prompt.id == waiting.id  # type: ignore[union-attr]
    with pytest.raises(BadInput):
        loop.attention.allow("make deploy")
    with pytest.raises(NotFound):
        loop.attention.deny("p00000")
    done = loop.attention.allow(waiting.id, actor="release-bot")
    assert (done.prompt_id, done.decision, done.actor, done.via) == (
        waiting.id, "allow", "release-bot", "sdk",
    )  # fmt: skip
    assert json.loads(output(hook))["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    with pytest.raises(Conflict, match="already allowed by release-bot via sdk"):
        loop.attention.deny(waiting.id)
    newest = loop.attention.history(AGENT)[0]
    assert (newest.id, newest.answered_by, newest.answered_via) == (
        waiting.id,
        "release-bot",
        "sdk",
    )
    loop.close()


def test_standing_create_say_stop_through_the_sdk(loop_env: Env) -> None:
    agent_dir = loop_env.root / "agents"
    agent_dir.mkdir()
    loop = TheLoop(
        config={
            "stateDir": str(loop_env.state_dir),
            "tmux": {"socket": loop_env.socket, "harnessKillGraceSeconds": 2},
            "harnesses": {"fake": fake_harness(agent_dir)},
            "routing": {"defaultHarness": "fake"},
            "sandbox": {"mode": "none"},  # the fake agent writes its records outside its tree
        }
    )
    made = loop.standing.create("helper", prompt="my brief", description="d")
    assert made.start is not None and made.start.outcome == "started"
    conversation = made.start.conversation_id
    assert conversation and loop.standing.get("helper").status == "running"
    said = loop.standing.say("helper", "hi from the sdk", actor="ops")
    assert said.conversation_id == conversation
    work_texts = Work(loop_env, agent_dir, None).wait_prompts(conversation, 2)
    assert work_texts[0].rstrip().endswith("my brief")
    assert work_texts[1].endswith("hi from the sdk") and "from ops to standing" in work_texts[1]
    assert loop.standing.stop("helper").outcome == "stopped"
    assert loop.standing.get("helper").status == "stopped"
    with pytest.raises(NotRunning):
        loop.standing.say("helper", "nobody home")
    assert loop.standing.restart("helper").outcome == "resumed"
    assert [v.name for v in loop.standing.list()] == ["helper"]
    assert loop.standing.delete("helper").stop.outcome == "stopped"
    assert loop.standing.list() == []
    events = loop.events.query(types=["standing.*"], standing="helper", limit=100)
    assert events[0].type == "standing.created"
    assert loop.doctor().checks


# --- mount --------------------------------------------------------------------------------


def need_key(request: Request) -> None:
    if request.headers.get("x-key") != "sesame":
        raise HTTPException(status_code=403, detail="no key")


@contextlib.contextmanager
def serve(app: FastAPI) -> Iterator[str]:
    """APP over real HTTP on 127.0.0.1 (a free port) in a thread; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, timeout=10, what="uvicorn")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def user_app(work: Work) -> tuple[FastAPI, dict[str, Any]]:
    seen: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> Any:
        seen["started"] = True
        yield {"mine": 1}
        seen["stopped"] = True

    app = FastAPI(lifespan=lifespan)

    @app.get("/hello")
    async def hello(request: Request) -> dict[str, Any]:
        return {"mine": request.state.mine}

    TheLoop(work.env.config_path).mount(app, "/loop", dependencies=[Depends(need_key)])
    return app, seen


async def test_mount_serves_rest_and_mcp_behind_the_callers_dependency(work: Work) -> None:
    result = work.dispatch("issue_comment", P.issue_comment_event("the-loop do fix it"), "m-1")
    assert result.exit_code == 0, result.stderr
    app, seen = user_app(work)
    key = {"x-key": "sesame"}
    with serve(app) as url:
        assert httpx.get(f"{url}/hello").json() == {"mine": 1}
        refused = httpx.get(f"{url}/loop/api/v1/sessions")
        assert refused.status_code == 403 and refused.json() == {"detail": "no key"}
        listed = httpx.get(f"{url}/loop/api/v1/sessions", headers=key)
        assert listed.status_code == 200 and listed.json()[0]["workItem"] == REF
        missing = httpx.get(f"{url}/loop/api/v1/sessions/nope", headers=key)
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
        sid = listed.json()[0]["id"]
        loop = TheLoop(work.env.config_path)
        answered = httpx.get(f"{url}/loop/api/v1/sessions/{sid}", headers=key).json()
        parsed = SessionView.model_validate(answered)
        assert to_wire(parsed) == answered == to_wire(loop.sessions.get(sid))
        assert abs(parsed.created_at - loop.sessions.get(sid).created_at) < 0.001
        assert [to_wire(SessionSummary.model_validate(r)) for r in listed.json()] == listed.json()
        status = httpx.get(f"{url}/loop/api/v1/status", headers=key).json()
        assert status["running"] is False and status["pid"] is None
        assert StatusReport.model_validate(status).sessions == {"active": 1}
        posted = httpx.post(f"{url}/loop/api/v1/sessions/{sid}/messages", json={"text": "x"})
        assert posted.status_code == 403
        assert httpx.post(f"{url}/loop/mcp", json={}).status_code == 403
        async with (
            httpx2.AsyncClient(headers=key, timeout=30) as http,
            Client(streamable_http_client(f"{url}/loop/mcp", http_client=http)) as client,
        ):
            said = await client.call_tool("say_to_session", {"session": REF, "text": "mounted"})
            assert not said.is_error, said.content
        assert "mounted" in work.wait_prompts(sid, 2)[1]
        openapi = httpx.get(f"{url}/openapi.json").json()
        assert "/loop/api/v1/sessions" in openapi["paths"]
    assert seen == {"started": True, "stopped": True}


def test_mount_refuses_a_bad_prefix_and_can_leave_mcp_out(loop_env: Env) -> None:
    loop = TheLoop(loop_env.config_path)
    with pytest.raises(BadInput):
        loop.mount(FastAPI(), "loop/")
    app = FastAPI()
    assert loop.mount(app, "", mcp=False) is None
    with serve(app) as url:
        assert httpx.get(f"{url}/api/v1/events/types").status_code == 200
        assert httpx.post(f"{url}/mcp", json={}).status_code == 404


def test_a_session_is_started_by_hand_through_the_sdk(work: Work) -> None:
    """``loop.sessions.start`` is ``the-loop sessions start``: a local work item's agent is
    spawned with the prompt, a second start delivers into it, and bad input is refused."""
    loop = TheLoop(work.env.config_path)
    started = loop.sessions.start("local:sdk", "tok-sdk-start", actor="sdk-user")
    assert (started.action, started.work_item, started.status) == ("spawned", "local:sdk", "active")
    assert "tok-sdk-start" in work.wait_prompts(started.session_id, 1)[0]
    again = loop.sessions.start("local:sdk", "tok-sdk-again")
    assert (again.action, again.session_id) == ("delivered", started.session_id)
    assert "tok-sdk-again" in work.wait_prompts(started.session_id, 2)[1]
    for ref, prompt in (("local:sdk", "  "), ("nonsense", "hi"), ("local:other", "hi")):
        with pytest.raises(BadInput):
            loop.sessions.start(ref, prompt, harness="no-such-agent" if "other" in ref else None)
    assert [s.work_item for s in loop.sessions.list()] == ["local:sdk"]
    loop.close()
