"""One output contract (SPEC §10): the installed CLI's ``--format json`` of an object equals the
REST answer for it, and every JSON output of the CLI, REST, MCP and SSE has camelCase keys and
ISO 8601 UTC timestamps."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from tests.daemon import SECRET, Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.mcp.test_mcp import over_http
from the_loop import wire
from the_loop.intake.dispatch import DispatchResult
from the_loop.intake.github_poller import RepoResult

REF = "github:octo/repo#15"
CAMEL = re.compile(r"\A[a-z][a-zA-Z0-9]*\Z")
ISO_UTC = re.compile(r"\A\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z\Z")
NAME_KEYED = ("detail.standing", "detail.tasks")
"""Maps whose keys are names (of standing sessions, of background tasks), not field names."""


def _is_time_key(key: str) -> bool:
    return key.endswith("At") or key in {"ts", "since"}


def check_contract(value: Any, where: str = "$") -> int:
    """Assert VALUE follows the contract (see the module docstring); returns how many
    timestamps it saw, so that a caller can make sure there were some."""
    seen = 0
    if isinstance(value, dict):
        named = where.endswith(NAME_KEYED)
        for key, item in value.items():
            if not named:
                assert CAMEL.match(key), f"{where}: key {key!r} is not camelCase"
            if not named and _is_time_key(key) and item is not None:
                assert isinstance(item, str) and ISO_UTC.match(item), f"{where}.{key}: {item!r}"
                seen += 1
            seen += check_contract(item, f"{where}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            seen += check_contract(item, f"{where}[{index}]")
    elif isinstance(value, float):
        assert not 1e9 <= value <= 1e10, f"{where}: {value} looks like epoch seconds"
    return seen


def _cli_json(daemon: Daemon, *args: str) -> Any:
    # the CLI runs in the daemon's environment: doctor's warnings depend on it (the secret)
    env = {**daemon.work.env.process_env(), "THE_LOOP_WEBHOOK_SECRET": SECRET}
    result = daemon.work.env.run(*args, "--format", "json", env=env)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def _settled(daemon: Daemon) -> str:
    """A daemon with one live work-item session and one running standing session (probe)
    that has been spoken to; returns the session id."""
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "contract-1")
    assert r.status_code == 202
    wait_until(lambda: daemon.api("GET", "/status").json()["inbox"].get("succeeded"), timeout=20)
    sid = str(daemon.api("GET", "/sessions").json()[0]["id"])
    daemon.work.wait_prompts(sid, 1)
    made = daemon.api("POST", "/standing", json={"name": "probe", "prompt": "my brief"})
    assert made.status_code == 201, made.text
    said = daemon.api("POST", "/standing/probe/messages", json={"text": "hi", "actor": "ops"})
    assert said.status_code == 200, said.text
    daemon.work.wait_prompts(made.json()["start"]["conversationId"], 2)

    def settled() -> bool:  # the screen detector's quiet time passed: attention stops moving
        objects = [*daemon.api("GET", "/sessions").json(), *daemon.api("GET", "/standing").json()]
        return all((o.get("attention") or {}).get("state") == "waiting" for o in objects)

    wait_until(settled, 60, what="every agent waiting")
    return sid


def test_the_cli_json_of_an_object_equals_the_api_answer(daemon: Daemon) -> None:
    sid = _settled(daemon)
    events = ["--type", "session.*", "--type", "standing.*", "--limit", "1000"]
    params: Any = {"type": ["session.*", "standing.*"], "limit": 1000}
    pairs: list[tuple[str, Any, Any]] = [
        ("sessions list", _cli_json(daemon, "sessions", "list"), "/sessions"),
        ("sessions show", _cli_json(daemon, "sessions", "show", sid), f"/sessions/{sid}"),
        (
            "sessions show REF",
            _cli_json(daemon, "sessions", "show", REF),
            f"/sessions/{quote(REF, safe=':/')}",
        ),
        ("standing list", _cli_json(daemon, "standing", "list"), "/standing"),
        ("status", _cli_json(daemon, "status"), "/status"),
        ("events", _cli_json(daemon, "events", *events), ("/events", params)),
        ("events --types", _cli_json(daemon, "events", "--types"), "/events/types"),
        ("inbox list", _cli_json(daemon, "inbox", "list"), "/inbox"),
        ("doctor", _cli_json(daemon, "doctor"), "/doctor"),
        ("usage", _cli_json(daemon, "usage", "--work-item", REF), ("/usage", {"workItem": REF})),
    ]
    for name, via_cli, route in pairs:
        path, query = route if isinstance(route, tuple) else (route, None)
        via_api = daemon.api("GET", path, params=query).json()
        if name == "events":  # the log goes on (attention changes): compare what the CLI saw
            last = max(e["id"] for e in via_cli)
            via_api = [e for e in via_api if e["id"] <= last]
        if name == "status":  # memory figures move between two looks: compare their shape
            cli_memory, api_memory = via_cli.pop("memory"), via_api.pop("memory")
            assert sorted(cli_memory) == sorted(api_memory), name
            assert [a["agent"] for a in cli_memory["agents"]] == [
                a["agent"] for a in api_memory["agents"]
            ]
        assert via_cli == via_api, name
        assert via_cli, f"{name}: nothing to compare"
    # the CLI has no `standing show`: the API's one object is the CLI list's entry
    listed = {v["name"]: v for v in _cli_json(daemon, "standing", "list")}
    assert daemon.api("GET", "/standing/probe").json() == listed["probe"]
    # the same verb on both surfaces answers the same object (the CLI lists one per name)
    via_cli = _cli_json(daemon, "standing", "start", "probe")
    via_api = daemon.api("POST", "/standing/probe/start").json()
    assert via_cli == [via_api] and via_api["outcome"] == "already-running"
    status = _cli_json(daemon, "status")
    assert status["running"] is True and status["healthy"] is True
    assert status["pid"] == (daemon.proc.pid if daemon.proc else None)
    assert ISO_UTC.match(status["startedAt"])


def test_every_json_output_has_camel_case_keys_and_iso_utc_times(daemon: Daemon) -> None:
    sid = _settled(daemon)
    seen = 0
    cli_outputs = [
        ("sessions", "list"),
        ("sessions", "show", sid),
        ("standing", "list"),
        ("standing", "start"),
        ("events", "--limit", "1000"),
        ("events", "--types"),
        ("inbox", "list"),
        ("outbox", "list"),
        ("doctor",),
        ("status",),
        ("usage", "--work-item", REF),
        ("standing", "stop", "probe"),
    ]
    for args in cli_outputs:
        seen += check_contract(_cli_json(daemon, *args), " ".join(args))
    jsonl = daemon.work.env.run("events", "--limit", "1000", "--format", "jsonl").stdout
    for line in jsonl.splitlines():
        seen += check_contract(json.loads(line), "events jsonl")
    payload = daemon.work.env.root / "chat.json"
    payload.write_text(json.dumps(P.issue_comment_event("just chatting, no keyword")))
    dispatched = daemon.work.env.run(
        "dispatch", "--event", "issue_comment", str(payload), "--format", "json"
    )
    found = json.loads(dispatched.stdout)
    check_contract(found, "dispatch")
    assert {"deliveryId", "exitCode"} <= set(found)
    for path in _get_routes(daemon, sid):
        answer = daemon.api("GET", path)
        assert answer.status_code == 200, (path, answer.text)
        seen += check_contract(answer.json(), path)
    seen += check_contract(_first_sse_event(daemon), "/events/stream")
    assert seen > 20, "the outputs carried too few timestamps to check anything"


def _get_routes(daemon: Daemon, sid: str) -> list[str]:
    """Every GET route of the OpenAPI document (path parameters filled in), but the stream."""
    document = httpx.get(f"{daemon.url}/api/v1/openapi.json", timeout=30).json()
    filled = {"{session_id}": sid, "{name}": "probe", "{ref}": "standing:probe"}
    routes = []
    for path, ops in document["paths"].items():
        if "get" not in ops or path.endswith("/stream"):
            continue
        for placeholder, value in filled.items():
            path = path.replace(placeholder, value)
        assert "{" not in path, f"{path}: a path parameter this test does not fill"
        routes.append(path.removeprefix("/api/v1"))
    assert "/sessions" in routes and "/status" in routes and f"/sessions/{sid}" in routes
    return routes


def _first_sse_event(daemon: Daemon) -> Any:
    headers = {"Authorization": f"Bearer {daemon.token}", "Last-Event-ID": "0"}
    with httpx.stream(
        "GET", f"{daemon.url}/api/v1/events/stream", headers=headers, timeout=30
    ) as resp:
        for line in resp.iter_lines():
            if line.startswith("data: "):
                return json.loads(line.removeprefix("data: "))
    raise AssertionError("the stream ended without an event")


async def test_mcp_tool_results_follow_the_contract_in_both_forms(daemon: Daemon) -> None:
    sid = _settled(daemon)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("list_sessions", {}),
        ("get_session", {"session": sid}),
        ("read_session_screen", {"session": sid}),
        ("list_standing_sessions", {}),
        ("get_standing_session", {"name": "probe"}),
        ("query_events", {"limit": 1000}),
    ]
    seen = 0
    async with over_http(daemon.url, daemon.token) as client:
        for tool, args in calls:
            result = await client.call_tool(tool, args)
            assert not result.is_error, (tool, result.content)
            seen += check_contract(result.structured_content, tool)
            texts = [json.loads(c.text) for c in result.content if c.type == "text"]
            assert texts, tool
            structured = result.structured_content
            whole = structured["result"] if set(structured) == {"result"} else structured
            assert texts == (whole if isinstance(whole, list) else [whole]), tool
    assert seen > 10
    api = daemon.api("GET", f"/sessions/{sid}").json()
    async with over_http(daemon.url, daemon.token) as client:
        via_mcp = (await client.call_tool("get_session", {"session": sid})).structured_content
    assert via_mcp == api


def test_the_wire_forms_of_times_and_values() -> None:
    moment = datetime(2026, 12, 1, 12, 34, 56, 789_999, tzinfo=UTC)
    assert wire.iso(moment) == "2026-12-01T12:34:56.789Z"
    assert wire.iso(moment.timestamp()) == "2026-12-01T12:34:56.789Z"
    assert wire.iso(moment.replace(tzinfo=None)) == "2026-12-01T12:34:56.789Z"
    assert wire.parse_iso("2026-12-01T12:34:56.789Z") == moment.replace(microsecond=789_000)
    assert wire.parse_iso("2026-12-01T13:34:56+01:00") == moment.replace(microsecond=0)

    class Thing(wire.Wire):
        created_at: wire.Timestamp
        seen_at: wire.UtcDatetime | None = None

    thing = Thing(created_at=moment.timestamp(), seen_at=moment)
    shown = wire.to_wire(thing)
    assert shown == {"createdAt": "2026-12-01T12:34:56.789Z", "seenAt": "2026-12-01T12:34:56.789Z"}
    back = Thing.model_validate(shown)
    assert abs(back.created_at - thing.created_at) < 0.001 and back.seen_at is not None
    assert thing.model_dump(by_alias=False)["created_at"] == moment.timestamp()
    assert "createdAt" in thing.model_dump()
    # the CLI-only results that are dataclasses (`poll`, `dispatch`) are camelCase too
    repo = wire.to_wire([RepoResult("octo/repo", calls=2, not_modified=1)])
    assert repo[0]["notModified"] == 1 and check_contract(repo) == 0
    found = wire.to_wire(DispatchResult("d-1", "ping", False, "succeeded", reasons=("x",)))
    assert found["deliveryId"] == "d-1" and found["exitCode"] == 0 and found["reasons"] == ["x"]


def test_the_contract_check_refuses_snake_keys_epoch_floats_and_local_times() -> None:
    for bad in (
        {"created_at": "2026-12-01T12:34:56.789Z"},
        {"createdAt": 1764592496.789},
        {"items": [{"ts": "2026-12-01 12:34:56"}]},
        {"startedAt": "2026-12-01T13:34:56.789+01:00"},
        {"detail": {"poller": {"startedAt": 1764592496.5}}},
    ):
        try:
            check_contract(bad)
        except AssertionError:
            continue
        raise AssertionError(f"{bad} passed the contract check")
    assert check_contract({"detail": {"standing": {"my-agent": "running"}}, "ts": None}) == 0
