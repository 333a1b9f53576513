"""`the-loop sessions restart` (decision 0082): a live work item's agent is stopped and started
again with the environment of the command that restarts it as it is now, resuming its
conversation, and what waits for it is delivered — also behind a ``blocked`` of the old process
(no key), which no longer holds; a closed session, an unknown one and a pane the-loop did not
start are refused. Real tmux, the fake agent, the real CLI and HTTP app."""

from __future__ import annotations

import time

import pytest

from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.helpers import wait_until
from tests.work import Work
from the_loop.store import attention as store
from the_loop.store import open_database

REF = "local:again"


def test_a_restart_resumes_the_conversation_with_the_environment_of_now(
    work: Work, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_KEY_OF_NOW", "before")
    started = work.cli("sessions", "start", REF, "--prompt", "FIRST task")
    assert started.exit_code == 0, started.stderr
    sid = work.session_json(REF)["id"]
    work.wait_prompts(sid, 1)

    # its turn failed for want of a key (as Claude Code's StopFailure says): messages wait
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        with db.transaction() as tx:
            store.set_state(
                tx, sid, store.BLOCKED, "claude-hook:StopFailure",
                f"{store.LASTING_FAILURE} (authentication_failed)", now=time.time(),
                prompt=store.NewPrompt("blocked", text="authentication_failed: Not logged in"),
                work_item=REF,
            )  # fmt: skip
    finally:
        db.close()
    held = work.cli("sessions", "say", REF, "HELD-UNTIL-RESTART")
    assert "held while the agent cannot work" in held.stdout, held.stdout
    assert "delivered once it can work (0 delivered)" in held.stdout, held.stdout

    monkeypatch.setenv("FAKE_KEY_OF_NOW", "after")  # exported since
    restarted = work.cli("sessions", "restart", REF)
    assert restarted.exit_code == 0, restarted.stderr
    assert restarted.stdout.startswith(f"restarted {REF}: delivered 1 to {sid}"), restarted.stdout
    # the new process waits for input: what held the old one is gone
    assert (work.attention(REF)["state"], work.attention(REF)["signal"]) == ("waiting", "spawn")
    starts = wait_until(
        lambda: len(s := fake_agent.read_starts(work.agent_dir, sid)) == 2 and s,
        15,
        what="the second start",
    )
    assert [s.resumed for s in starts] == [False, True]  # the same conversation, resumed
    assert [s.env.get("FAKE_KEY_OF_NOW") for s in starts] == ["before", "after"]
    assert starts[0].pid != starts[1].pid
    assert [e["sessionId"] for e in work.events("session.restarted")] == [sid]
    assert work.session_json(REF)["id"] == sid  # the same session

    said = work.cli("sessions", "say", REF, "SECOND message")
    assert said.exit_code == 0, said.stderr
    prompts = work.wait_prompts(sid, 3)
    assert "FIRST task" in prompts[0] and "HELD-UNTIL-RESTART" in prompts[1], prompts
    assert "SECOND message" in prompts[2], prompts

    assert work.cli("sessions", "close", REF).exit_code == 0
    closed = work.cli("sessions", "restart", REF)
    assert closed.exit_code != 0 and "closed: not running" in closed.stderr, closed.stderr
    unknown = work.cli("sessions", "restart", "local:nobody")
    assert unknown.exit_code == 1 and "no session for local:nobody" in unknown.stderr


def test_a_pane_the_loop_did_not_start_is_not_restarted(work: Work) -> None:
    started = work.cli("sessions", "start", REF, "--prompt", "FIRST task")
    assert started.exit_code == 0, started.stderr
    sid = work.session_json(REF)["id"]
    work.wait_prompts(sid, 1)
    target = work.session_json(REF)["tmuxTarget"]
    assert work.tmux("kill-session", "-t", f"={target}").returncode == 0
    # someone else's program now sits where the agent was
    assert work.tmux("new-session", "-d", "-s", target, "sleep 600").returncode == 0
    refused = work.cli("sessions", "restart", REF)
    assert refused.exit_code != 0 and "did not start" in refused.stderr, refused.stderr
    alive = work.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_dead}")
    assert alive.stdout.strip() == "0"  # never touched
    assert len(fake_agent.read_starts(work.agent_dir, sid)) == 1


def test_the_api_restarts_and_refuses_without_the_full_token(daemon: Daemon) -> None:
    work = daemon.work
    started = work.cli("sessions", "start", REF, "--prompt", "FIRST task")
    assert started.exit_code == 0, started.stderr
    sid = work.session_json(REF)["id"]
    work.wait_prompts(sid, 1)
    anonymous = daemon.api("POST", f"/sessions/{sid}/restart", token=None)
    assert anonymous.status_code == 401 and anonymous.json()["error"]["code"]
    done = daemon.api("POST", f"/sessions/{sid}/restart")
    assert done.status_code == 200, done.text
    assert done.json()["detail"].startswith(f"delivered 0 to {sid}")
    wait_until(
        lambda: len(fake_agent.read_starts(work.agent_dir, sid)) == 2, 15, what="the restart"
    )
    missing = daemon.api("POST", "/sessions/no-such-session/restart")
    assert missing.status_code == 404 and missing.json()["error"]["message"]
