"""Idle suspend and memory-aware admission under the daemon, with the fake agent in real tmux:
a session waiting for ``sessions.suspendAfterMinutes`` is suspended (harness stopped, pane
kept, its memory no longer counted) and the next comment resumes the same conversation and is
delivered once; a session that needs permission is never suspended; with the free-memory
threshold above what the host has, spawns wait queued and start in FIFO order once a config
reload lowers it."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.spend import policy
from the_loop.context import open_ctx
from the_loop.daemon.housekeeping import reconcile_once
from the_loop.store import attention as attention_store

SUSPEND_MINUTES = 0.02  # 1.2 s
ATTENTION = {
    "quietSeconds": 0.5,
    "pollSeconds": 0.1,
    "notifyAfterSeconds": 3600,
    "harnesses": {
        "fake": {
            "signals": "screen",
            "permissionPatterns": [r"Permission needed: run (.*)\? \[y/n\]\s*\Z"],
        }
    },
}


def path(ref: str) -> str:
    return ref.replace("#", "%23")


def comment(d: Daemon, number: int, text: str, delivery: str) -> None:
    body = P.issue_comment_event(text, number=number)
    assert d.post("issue_comment", body, delivery).status_code == 202


def session(d: Daemon, ref: str) -> dict[str, Any]:
    found = d.api("GET", f"/sessions/{path(ref)}")
    return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]


def attention(d: Daemon, ref: str) -> dict[str, Any]:
    found = d.api("GET", f"/attention/{path(ref)}")
    return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]


def spawn(d: Daemon, number: int) -> dict[str, Any]:
    comment(d, number, "the-loop start", f"start-{number}")
    ref = f"github:octo/repo#{number}"
    wait_until(lambda: session(d, ref).get("startedAt"), 30, what=f"spawn of #{number}")
    return session(d, ref)


def agents_in_status(d: Daemon) -> list[str]:
    memory = d.api("GET", "/status").json()["memory"]
    return [a["agent"] for a in memory["agents"]]


@pytest.fixture
def spend_daemon(work: Work) -> Any:
    work.configure(
        attention=ATTENTION,
        github={"enabled": True},
        sessions={"suspendAfterMinutes": SUSPEND_MINUTES},
        tmux={"resumeProbeSeconds": 0.2},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def test_idle_session_suspended_then_resumed_by_a_comment_once(spend_daemon: Daemon) -> None:
    d, work = spend_daemon, spend_daemon.work
    ref = "github:octo/repo#15"
    first = spawn(d, 15)
    conversation = first["harnessSessionId"]
    work.wait_prompts(conversation, 1)
    wait_until(lambda: first["id"] in agents_in_status(d), 30, what="its RSS in status")

    wait_until(lambda: session(d, ref).get("hold") == "suspended", 30, what="suspended")
    assert attention(d, ref)["state"] == "suspended"
    wait_until(lambda: work.pane_dead(first["tmuxTarget"]) == "1", 30, what="harness stopped")
    assert session(d, ref)["status"] == "active", "the session still holds its work item"
    assert first["id"] not in agents_in_status(d), "a suspended session counts no memory"
    suspended = d.api("GET", "/events", params={"type": "session.suspended"}).json()
    assert len(suspended) == 1 and "suspendAfterMinutes" in suspended[0]["payload"]["reason"]
    # its pane is dead on purpose: the reconciler does not report it as vanished
    assert reconcile_once(open_ctx(work.env.config_path)) == []

    comment(d, 15, "WAKE-UP-PROMPT please look again", "wake-1")
    prompts = work.wait_prompts(conversation, 2, timeout=30)
    assert sum("WAKE-UP-PROMPT" in p for p in prompts) == 1
    starts = fake_agent.read_starts(work.agent_dir, conversation)
    assert [s.resumed for s in starts] == [False, True], "the same conversation, resumed"
    after = session(d, ref)
    assert after["hold"] is None and after["harnessSessionId"] == conversation
    assert work.pane_dead(first["tmuxTarget"]) == "0"
    woken = d.api("GET", "/events", params={"type": "session.woken"}).json()
    assert len(woken) == 1 and woken[0]["payload"]["hold"] == "suspended"
    # its harness was stopped on purpose: waking it tells nobody that it was gone
    vanished = d.api("GET", "/events", params={"type": "session.vanished"}).json()
    assert vanished == [], "a suspended agent woken is not a crash"
    changes = d.api("GET", "/events", params={"type": "session.attention_changed"}).json()
    assert "blocked" not in [e["payload"]["to"] for e in changes]
    # it goes to sleep again once idle, and the same comment redelivered is not delivered twice
    wait_until(lambda: session(d, ref).get("hold") == "suspended", 30, what="suspended again")
    comment(d, 15, "WAKE-UP-PROMPT please look again", "wake-1")
    comment(d, 15, "SECOND-WAKE", "wake-2")
    prompts = work.wait_prompts(conversation, 3, timeout=30)
    assert sum("WAKE-UP-PROMPT" in p for p in prompts) == 1
    assert "SECOND-WAKE" in prompts[-1]


def test_a_session_needing_permission_is_never_suspended(spend_daemon: Daemon) -> None:
    d, work = spend_daemon, spend_daemon.work
    asking = spawn(d, 16)
    ref = "github:octo/repo#16"
    work.wait_prompts(asking["harnessSessionId"], 1)
    sent = d.api("POST", f"/sessions/{path(ref)}/messages", json={"text": "ASK-PERMISSION: ls"})
    assert sent.status_code == 200, sent.text
    wait_until(lambda: attention(d, ref).get("state") == "needs-permission", 30)
    idle = spawn(d, 17)  # proves the spend task runs meanwhile
    wait_until(lambda: session(d, "github:octo/repo#17").get("hold") == "suspended", 30)
    limit = SUSPEND_MINUTES * 60
    wait_until(lambda: attention(d, ref)["waitingSeconds"] > 3 * limit, 30, what="a long wait")
    assert attention(d, ref)["state"] == "needs-permission"
    assert session(d, ref)["hold"] is None
    assert work.pane_dead(asking["tmuxTarget"]) == "0"
    assert idle["id"] != asking["id"]


def test_spawns_wait_for_memory_and_start_in_fifo_order_after_a_reload(work: Work) -> None:
    sections: dict[str, Any] = {"attention": ATTENTION, "github": {"enabled": True}}
    work.configure(admission={"minFreeMemoryMb": 10**9}, **sections)
    d = Daemon(work)
    d.start()
    try:
        for number in (21, 22):
            comment(d, number, "the-loop start", f"start-{number}")
            ref = f"github:octo/repo#{number}"
            wait_until(lambda ref=ref: session(d, ref).get("status") == "queued", 30)  # type: ignore[misc]
        queued = d.api("GET", "/events", params={"type": "dispatch.queued"}).json()
        assert sorted(e["payload"]["reason"] for e in queued) == ["memory", "memory"]
        assert "minFreeMemoryMb" in queued[0]["payload"]["detail"]
        assert d.api("GET", "/status").json()["memory"]["waiting"]
        assert not d.api("GET", "/events", params={"type": "session.spawned"}).json()

        work.configure(admission={"minFreeMemoryMb": 1}, **sections)
        wait_until(
            lambda: len(d.api("GET", "/events", params={"type": "session.spawned"}).json()) == 2,
            60,
            what="both started after the reload",
        )
        spawned = d.api("GET", "/events", params={"type": "session.spawned"}).json()
        in_order = sorted(spawned, key=lambda e: e["id"])
        assert [e["workItem"] for e in in_order] == ["github:octo/repo#21", "github:octo/repo#22"]
    finally:
        d.stop()


async def test_mcp_get_session_shows_the_hold_and_usage_as_rest_does(spend_daemon: Daemon) -> None:
    from tests.mcp.test_mcp import over_http, structured

    d = spend_daemon
    ref = "github:octo/repo#18"
    spawn(d, 18)
    wait_until(lambda: session(d, ref).get("hold") == "suspended", 30, what="suspended")
    rest = session(d, ref)
    async with over_http(d.url, d.token) as client:
        mcp = structured(await client.call_tool("get_session", {"session": ref}))
    assert mcp["hold"] == rest["hold"] == "suspended"
    assert mcp["usage"] == rest["usage"] and rest["usage"]["turns"] == 0
    listed = d.api("GET", "/sessions").json()
    assert listed[0]["usage"] == rest["usage"] and listed[0]["hold"] == "suspended"


def test_a_start_waits_while_the_live_agents_measured_memory_is_above_the_cap(
    work: Work,
) -> None:
    """One live fake agent holds a few MiB of its own (measured from /proc): with a 1 MiB cap
    the first start goes (nothing live), the second waits queued, and it starts once the first
    agent is gone (its memory no longer counted)."""
    sections: dict[str, Any] = {"attention": ATTENTION, "github": {"enabled": True}}
    work.configure(admission={"maxAgentsMemoryMb": 1}, **sections)
    d = Daemon(work)
    d.start()
    try:
        first = spawn(d, 31)
        work.wait_prompts(first["harnessSessionId"], 1)
        comment(d, 32, "the-loop start", "start-32")
        wait_until(lambda: session(d, "github:octo/repo#32").get("status") == "queued", 30)
        memory = d.api("GET", "/status").json()["memory"]
        assert memory["liveAgents"] == 1 and memory["agentsAnonMb"] > 1, memory
        queued = d.api("GET", "/events", params={"type": "dispatch.queued"}).json()
        assert [e["payload"]["reason"] for e in queued] == ["memory"]
        assert "maxAgentsMemoryMb" in queued[0]["payload"]["detail"]

        closed = P.issues_event("closed", number=31, state="closed")
        assert d.post("issues", closed, "close-31").status_code == 202
        wait_until(
            lambda: session(d, "github:octo/repo#32").get("startedAt"),
            60,
            what="the queued start once the first agent is gone",
        )
    finally:
        d.stop()


def test_idle_time_counts_from_the_last_delivered_prompt(work: Work) -> None:
    """An agent recorded ``waiting`` longer than ``suspendAfterMinutes`` that was just given a
    prompt is not idle: a harness read from its screen reads ``working`` only once its pane
    shows the turn, and suspending it in between lost that turn (a Gemini agent woken by a
    message, on a loaded host). Idle time counts from the later of the two."""
    work.configure(attention=ATTENTION, sessions={"suspendAfterMinutes": 1})
    ref = "local:idle-clock"
    assert work.cli("sessions", "start", ref, "--prompt", "IDLE-CLOCK").exit_code == 0
    key = work.session_json(ref)["id"]
    work.wait_prompts(work.session_json(ref)["harnessSessionId"], 1)
    ctx = open_ctx(work.env.config_path)
    with ctx.db.transaction() as tx:  # waiting for an hour, as its record reads
        attention_store.set_state(
            tx, key, attention_store.WAITING, "screen", "idle", now=time.time() - 3600
        )

    policy.check(ctx, {}, set(), time.time())
    assert work.session_json(ref)["hold"] is None, "given a prompt just now: not idle"
    policy.check(ctx, {}, set(), time.time() + 61)
    assert work.session_json(ref)["hold"] == "suspended", "a minute after it: idle"
