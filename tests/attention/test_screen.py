"""The screen detector under the daemon, with the fake agent in real tmux: waiting after the
quiet time, a permission pattern → needs-permission, explain names the rule, answers by keys
(checked against the screen), stale answers refused; CLI, REST and MCP list the same
sessions in the same order."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.daemon import SECRET, Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.mcp.test_mcp import over_http, structured
from tests.work import Work

PATTERN = r"Permission needed: run (.*)\? \[y/n\]\s*\Z"
ATTENTION = {
    "quietSeconds": 1,
    "pollSeconds": 0.1,
    "notifyAfterSeconds": 3600,
    "harnesses": {
        "fake": {
            "signals": "screen",
            "permissionPatterns": [PATTERN],
            "allowKeys": ["y", "Enter"],
            "denyKeys": ["n", "Enter"],
        }
    },
}


@pytest.fixture
def screen_daemon(work: Work) -> Any:
    work.configure(attention=ATTENTION, github={"enabled": True})
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def explain(work: Work, ref: str) -> dict[str, Any]:
    result = work.env.run("attention", "explain", ref, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def state(work: Work, ref: str) -> str | None:
    result = work.env.run("attention", "explain", ref, "--format", "json")
    return json.loads(result.stdout)["state"] if result.exit_code == 0 else None


def path(ref: str) -> str:
    return ref.replace("#", "%23")


def spawn(d: Daemon, number: int) -> str:
    body = P.issue_comment_event("the-loop start", number=number)
    assert d.post("issue_comment", body, f"att-{number}").status_code == 202
    ref = f"github:octo/repo#{number}"
    wait_until(lambda: d.api("GET", f"/sessions/{path(ref)}").status_code == 200, 30, what="spawn")
    return ref


def say(d: Daemon, ref: str, text: str) -> None:
    sent = d.api("POST", f"/sessions/{path(ref)}/messages", json={"text": text})
    assert sent.status_code == 200, sent.text


def allow(work: Work, ref: str, prompt_id: str) -> str:
    """``sessions allow REF --prompt PROMPT_ID``, then wait until the keys reached the agent;
    its session id."""
    allowed = work.env.run("sessions", "allow", ref, "--prompt", prompt_id)
    assert allowed.exit_code == 0, allowed.stderr
    sid: str = work.session_json(ref)["id"]
    wait_until(
        lambda: any(
            r.get("kind") == "answer" for r in fake_agent.read_records(work.agent_dir, sid)
        ),
        15,
        what="the keys reached the agent",
    )
    return sid


def test_quiet_time_then_permission_pattern_answered_by_keys(screen_daemon: Daemon) -> None:
    work = screen_daemon.work
    ref = spawn(screen_daemon, 15)
    wait_until(lambda: state(work, ref) == "waiting", 30, what="waiting after the quiet time")
    waited = explain(work, ref)
    assert waited["signal"] == "screen" and "quietSeconds" in waited["rule"]

    say(screen_daemon, ref, "ASK-PERMISSION: make deploy")
    wait_until(lambda: state(work, ref) == "needs-permission", 30, what="needs-permission")
    asked = explain(work, ref)
    assert asked["rule"].startswith("permissionPatterns[0]"), asked
    prompt = asked["prompt"]
    assert prompt["kind"] == "permission" and "make deploy" in prompt["text"]
    assert work.env.run("sessions", "list").stdout.count("needs-permission") == 1
    # every session object carries it: sessions show/list (CLI and REST) name the same prompt
    shown = work.session_json(ref)["attention"]
    listed = screen_daemon.api("GET", "/sessions").json()
    (mine,) = [s["attention"] for s in listed if s["workItem"] == ref]
    assert shown == mine and shown["state"] == "needs-permission"
    assert shown["prompt"]["id"] == prompt["id"] and shown["rule"] == asked["rule"]

    sid = allow(work, ref, prompt["id"])
    answers = [r for r in fake_agent.read_records(work.agent_dir, sid) if r["kind"] == "answer"]
    assert [(a["command"], a["answer"]) for a in answers] == [("make deploy", "y")]

    again = work.env.run("sessions", "deny", ref, "--prompt", prompt["id"])
    assert again.exit_code != 0 and "stale" in again.stderr, again.stderr
    assert "already allowed" in again.stderr
    wait_until(lambda: state(work, ref) == "waiting", 30, what="waiting again")
    changes = [e["payload"]["to"] for e in work.events("session.attention_changed")]
    assert changes[-3:] == ["needs-permission", "working", "waiting"], changes


def test_nothing_pending_is_refused(screen_daemon: Daemon) -> None:
    work = screen_daemon.work
    ref = spawn(screen_daemon, 16)
    wait_until(lambda: state(work, ref) == "waiting", 30, what="waiting")
    refused = work.env.run("sessions", "allow", ref)
    assert refused.exit_code != 0 and "no pending permission prompt" in refused.stderr
    api = screen_daemon.api(
        "POST",
        f"/sessions/{path(ref)}/permission",
        json={"decision": "allow", "promptId": "pzzzzz"},
    )
    assert api.status_code == 400 and api.json()["error"]["code"]
    api = screen_daemon.api("POST", f"/sessions/{path(ref)}/permission", json={"decision": "allow"})
    assert api.status_code == 409, api.text


async def test_cli_rest_and_mcp_list_the_same_sessions_in_order(screen_daemon: Daemon) -> None:
    work = screen_daemon.work
    refs = [spawn(screen_daemon, n) for n in (21, 22)]
    for ref in refs:
        wait_until(lambda r=ref: state(work, r) == "waiting", 30, what="waiting")  # type: ignore[misc]
    for ref in reversed(refs):
        say(screen_daemon, ref, f"ASK-PERMISSION: deploy {ref[-2:]}")
        wait_until(lambda r=ref: state(work, r) == "needs-permission", 30, what="asking")  # type: ignore[misc]
    cli = json.loads(work.env.run("attention", "--format", "json").stdout)
    # `attention list` is the same listing, named as `sessions list` and `standing list` are
    listed = json.loads(work.env.run("attention", "list", "--format", "json").stdout)
    assert [(r["workItem"], r["prompt"]["id"]) for r in listed] == [
        (r["workItem"], r["prompt"]["id"]) for r in cli
    ]
    rest = screen_daemon.api("GET", "/attention").json()
    async with over_http(screen_daemon.url, screen_daemon.token) as client:
        mcp = structured(await client.call_tool("list_attention", {}))["result"]
    order = [row["workItem"] for row in cli]
    assert order == [refs[1], refs[0]]  # oldest wait first
    assert [row["workItem"] for row in rest] == order
    assert [row["workItem"] for row in mcp] == order
    assert [row["prompt"]["id"] for row in rest] == [row["prompt"]["id"] for row in cli]
    assert all(row["since"].endswith("Z") or row["since"].endswith("+00:00") for row in rest)
    assert SECRET not in json.dumps(rest)


def test_a_local_work_item_is_named_like_any_other(screen_daemon: Daemon) -> None:
    """`local:NAME` names its session wherever a work item's ref does: `attention explain`,
    `sessions allow|deny` and the REST answer find its prompt (they took only `…#N` refs, a
    session id or a standing name, and answered `no session or standing session`)."""
    work, ref = screen_daemon.work, "local:deploy-check"
    started = work.env.run("sessions", "start", ref, "--prompt", "ASK-PERMISSION: make deploy")
    assert started.exit_code == 0, started.stderr
    wait_until(lambda: state(work, ref) == "needs-permission", 30, what="needs-permission")
    prompt = explain(work, ref)["prompt"]
    assert prompt["kind"] == "permission" and "make deploy" in prompt["text"]
    wrong = work.env.run("sessions", "allow", "local:nothing-here", "--prompt", prompt["id"])
    assert wrong.exit_code != 0 and "no session for local:nothing-here" in wrong.stderr
    allow(work, ref, prompt["id"])
    again = screen_daemon.api(
        "POST", f"/sessions/{ref}/permission", json={"decision": "deny", "promptId": prompt["id"]}
    )
    assert again.status_code == 409 and "already allowed" in again.text, again.text


def test_a_restarted_daemon_keeps_idle_agents_waiting(screen_daemon: Daemon) -> None:
    """A daemon that starts again does not read every idle agent ``working`` until its quiet
    time is over: a pane that has not printed since is as quiet as its recorded ``waiting``.
    A pane that does print is read at once, as ever."""
    d = screen_daemon
    work = d.work
    idle, busy = spawn(d, 61), spawn(d, 62)
    for ref in (idle, busy):
        wait_until(lambda ref=ref: state(work, ref) == "waiting", 30, what=f"{ref} waiting")

    def moves(ref: str) -> list[tuple[str, str]]:
        found = d.api("GET", "/events", params={"type": "session.attention_changed", "limit": 200})
        return [
            (e["payload"]["from"], e["payload"]["to"]) for e in found.json() if e["workItem"] == ref
        ]

    def woken() -> int:
        return moves(busy).count(("waiting", "working"))

    before = woken()
    d.stop()
    d.start()
    say(d, busy, "print something")
    # the first pass after the start read every pane, the idle one with it (the busy one's
    # `working` lasts its quiet second, which a loaded machine's CLI could miss: its event stays)
    wait_until(lambda: woken() > before, 30, what="the busy pane read working")
    moved = moves(idle)
    assert moved == [("working", "waiting")], moved
    assert state(work, idle) == "waiting"


def test_a_message_to_a_standing_session_showing_a_dialog_is_told_held(
    screen_daemon: Daemon,
) -> None:
    """While a standing session's agent shows a dialog, a message waits, and the answer says
    so and when it goes (the dashboard and the CLI show that `detail`), not "delivered"."""
    made = screen_daemon.api("POST", "/standing", json={"name": "probe", "prompt": "brief"})
    assert made.status_code == 201, made.text
    conversation = made.json()["start"]["conversationId"]
    ask = {"text": "ASK-PERMISSION: deploy"}
    assert screen_daemon.api("POST", "/standing/probe/messages", json=ask).status_code == 200
    screen_daemon.work.wait_attention("probe", "needs-permission", 30)
    said = screen_daemon.api("POST", "/standing/probe/messages", json={"text": "WAITED"})
    held = said.json()
    assert said.status_code == 200 and held["held"] and held["chars"] == 0, held
    assert held["detail"] == f"{held['held']} in probe; delivered once it is answered", held
    assert not any("WAITED" in p for p in screen_daemon.work.prompts(conversation))

    # the page says that it waits, and why, until it is delivered (the line under the message
    # box, the answer's detail, is not kept past that: dashboard.js drops it with this one)
    page, _ = logged_in(screen_daemon, screen_daemon.token)
    waits = "1 message not delivered yet: held behind a permission prompt"
    assert waits in page.get("/standing/probe").text
    prompt_id = screen_daemon.work.wait_attention("probe", "needs-permission", 5)["prompt"]["id"]
    allow = {"decision": "allow", "promptId": prompt_id}
    allowed = screen_daemon.api("POST", "/sessions/standing:probe/permission", json=allow)
    assert allowed.status_code == 200, allowed.text
    wait_until(
        lambda: any("WAITED" in p for p in screen_daemon.work.prompts(conversation)),
        30,
        what="the held message delivered once the dialog is answered",
    )
    assert "data-waiting" not in page.get("/standing/probe").text
