"""REST /api/v1 over HTTP: auth (401/403), every route, errors, and parity with the CLI."""

from __future__ import annotations

import json
import threading
from urllib.parse import quote

import httpx

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until

REF = "github:octo/repo#15"


def started(daemon: Daemon) -> str:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "api-1")
    assert r.status_code == 202
    wait_until(lambda: daemon.api("GET", "/status").json()["inbox"].get("succeeded"), timeout=20)
    return str(daemon.api("GET", "/sessions").json()[0]["id"])


def test_every_route_needs_a_token(daemon: Daemon) -> None:
    paths = [
        "/health",
        "/status",
        "/doctor",
        "/sessions",
        "/sessions/x",
        "/sessions/x/screen",
        "/events",
        "/events/types",
        "/inbox",
    ]
    for path in paths:
        r = daemon.api("GET", path, token=None)
        assert r.status_code == 401, path
        assert r.json()["error"]["code"] == "unauthorized"
        assert daemon.api("GET", path, token="wrong").status_code == 401, path
    for path in [
        "/sessions/x/messages",
        "/sessions/x/close",
        "/sessions/x/pause",
        "/sessions/x/resume",
    ]:
        assert daemon.api("POST", path, token=None, json={"text": "x"}).status_code == 401
    assert httpx.get(f"{daemon.url}/metrics").status_code == 401


def test_read_only_token_reads_but_cannot_write(work) -> None:  # type: ignore[no-untyped-def]
    work.configure(github={"enabled": True})
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN="ro-token-123")
    try:
        sid = started(d)
        assert d.api("GET", "/sessions", token="ro-token-123").status_code == 200
        r = d.api("POST", f"/sessions/{sid}/messages", token="ro-token-123", json={"text": "x"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        assert d.api("POST", f"/sessions/{sid}/pause", token="ro-token-123").status_code == 403
    finally:
        d.stop()


def test_session_routes_and_cli_parity(daemon: Daemon) -> None:
    sid = started(daemon)
    via_cli = json.loads(daemon.work.cli("sessions", "list", "--format", "json").stdout)
    via_api = daemon.api("GET", "/sessions").json()
    assert via_cli == via_api
    one = daemon.api("GET", f"/sessions/{sid}").json()
    assert one["workItem"] == REF and one["pane"] == "live"
    assert daemon.api("GET", f"/sessions/{quote(REF, safe='')}").json()["id"] == sid
    msg = daemon.api("POST", f"/sessions/{sid}/messages", json={"text": "hello from api"})
    assert msg.status_code == 200, msg.text
    assert "hello from api" in daemon.work.wait_prompts(sid, 2)[1]
    wait_until(
        lambda: "FAKE-AGENT GOT" in daemon.api("GET", f"/sessions/{sid}/screen").json()["text"]
    )
    assert daemon.api("POST", f"/sessions/{sid}/pause").json()["status"] == "paused"
    assert daemon.api("POST", f"/sessions/{sid}/resume").json()["status"] == "active"
    closed = daemon.api("POST", f"/sessions/{sid}/close", json={"killTmux": False})
    assert closed.json()["status"] == "closed" and closed.json()["closeReason"] == "operator"
    again = daemon.api("POST", f"/sessions/{sid}/close")
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"


def test_errors_are_json_4xx(daemon: Daemon) -> None:
    assert daemon.api("GET", "/sessions/nope").status_code == 404
    assert daemon.api("GET", "/sessions/nope").json()["error"]["code"] == "not_found"
    assert daemon.api("GET", "/no-such-route").json()["error"]["code"] == "not_found"
    assert daemon.api("GET", "/sessions", params={"status": "bogus"}).status_code == 422
    assert daemon.api("GET", "/events", params={"since": "soon"}).status_code == 400
    assert daemon.api("GET", "/events", params={"workItem": "x y"}).status_code == 400
    bad = daemon.api(
        "POST", "/sessions/x/messages", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert bad.status_code == 422 and "error" in bad.json()
    sid = started(daemon)
    blank = daemon.api("POST", f"/sessions/{sid}/messages", json={"text": "   "})
    assert blank.status_code == 400


def test_status_doctor_inbox_events_metrics(daemon: Daemon) -> None:
    started(daemon)
    assert daemon.api("GET", "/health").json()["status"] == "ok"
    status = daemon.api("GET", "/status").json()
    assert status["sessions"] == {"active": 1} and status["inbox"]["succeeded"] == 1
    assert "checks" in daemon.api("GET", "/doctor").json()
    inbox = daemon.api("GET", "/inbox").json()
    assert inbox[0]["deliveryId"] == "api-1"
    events = daemon.api("GET", "/events", params={"type": "session.*"}).json()
    assert events[0]["type"] == "session.spawned" and events[0]["workItem"] == REF
    types = daemon.api("GET", "/events/types").json()
    assert any(t["type"] == "standing.said" for t in types)
    metrics = httpx.get(
        f"{daemon.url}/metrics", headers={"Authorization": f"Bearer {daemon.token}"}
    ).text
    assert 'the_loop_sessions{status="active"} 1' in metrics
    assert "the_loop_webhook_ack_seconds_count 1" in metrics
    assert 'the_loop_inbox{status="succeeded"} 1' in metrics


def test_sse_stream_from_another_process_and_resume(daemon: Daemon) -> None:
    from the_loop import events as ev
    from the_loop.store import open_database

    db = open_database(daemon.work.env.state_dir)
    got: list[dict[str, object]] = []
    ids: list[str] = []
    ready = threading.Event()

    def read(last_id: str | None, want: int) -> None:
        headers = {"Authorization": f"Bearer {daemon.token}"}
        if last_id:
            headers["Last-Event-ID"] = last_id
        with httpx.stream(
            "GET",
            f"{daemon.url}/api/v1/events/stream",
            headers=headers,
            params={"type": "standing.*"},
            timeout=20,
        ) as r:
            ready.set()
            for line in r.iter_lines():
                if line.startswith("id: "):
                    ids.append(line[4:])
                if line.startswith("data: "):
                    got.append(json.loads(line[6:]))
                    if len(got) >= want:
                        return

    emitted: list[int] = []
    reader = threading.Thread(target=read, args=(None, 1))
    reader.start()
    ready.wait(10)

    def emit_until_seen() -> bool:
        emitted.append(ev.emit(db, "standing.said", source="other", standing="probe"))
        return bool(got)

    wait_until(emit_until_seen, timeout=10, interval=0.05)
    reader.join(10)
    assert got[0]["standing"] == "probe"
    first = int(ids[0])
    emitted.append(ev.emit(db, "standing.stopped", source="other", standing="probe"))
    ev.emit(db, "daemon.started", source="other")
    emitted.append(ev.emit(db, "standing.started", source="other", standing="probe"))
    expected = [i for i in emitted if i > first]
    got.clear()
    ids.clear()
    resumed = threading.Thread(target=read, args=(str(first), len(expected)))
    resumed.start()
    resumed.join(15)
    assert [int(i) for i in ids] == expected
    assert [g["type"] for g in got][-2:] == ["standing.stopped", "standing.started"]


def test_committed_openapi_matches_the_served_document(daemon: Daemon) -> None:
    from pathlib import Path

    served = httpx.get(f"{daemon.url}/api/v1/openapi.json").json()
    committed = json.loads(
        (Path(__file__).resolve().parents[2] / "docs" / "openapi.json").read_text()
    )
    assert committed == served, "docs/openapi.json is stale: run `make docs`"
    assert "/api/v1/sessions/{session_id}/messages" in served["paths"]


def test_standing_routes(daemon: Daemon) -> None:
    from tests.fakes import fake_agent

    assert daemon.api("POST", "/standing", token=None, json={"name": "x"}).status_code == 401
    bad = daemon.api("POST", "/standing", json={"name": "Bad_Name", "prompt": "x"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_input"
    made = daemon.api("POST", "/standing", json={"name": "probe", "prompt": "my brief"})
    assert made.status_code == 201, made.text
    conversation = made.json()["start"]["conversationId"]
    assert daemon.api("GET", "/standing/probe").json()["status"] == "running"
    assert [v["name"] for v in daemon.api("GET", "/standing").json()] == ["probe"]
    said = daemon.api("POST", "/standing/probe/messages", json={"text": "hi", "actor": "ops"})
    assert said.status_code == 200, said.text
    assert said.json()["detail"] == "delivered to probe (2 characters)"  # the text sent: "hi"
    texts = daemon.work.wait_prompts(conversation, 2)
    assert texts[1].endswith("hi") and "Message from ops to standing session `probe`" in texts[1]
    assert daemon.api("POST", "/standing/probe/stop").json()["outcome"] == "stopped"
    refused = daemon.api("POST", "/standing/probe/messages", json={"text": "hi"})
    assert refused.status_code == 409 and "the-loop standing start probe" in refused.text
    assert daemon.api("POST", "/standing/probe/start").json()["outcome"] == "resumed"
    assert daemon.api("POST", "/standing/probe/restart").json()["outcome"] == "resumed"
    assert fake_agent.read_starts(daemon.work.agent_dir, conversation)[-1].resumed
    assert daemon.api("GET", "/standing/nobody").status_code == 404
    assert daemon.api("DELETE", "/standing/nobody").status_code == 404
    assert daemon.api("DELETE", "/standing/probe").status_code == 200
    assert daemon.api("GET", "/standing").json() == []
