"""``the-loop hook`` as Claude Code runs it: a real process, the hook's JSON on stdin, reporting
to a real daemon over its hook channel (SQLite and PostgreSQL); answers given through the CLI
reach a waiting permission hook, and the prompt is then closed as answered."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
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
    start_hook,
)
from tests.conftest import BACKENDS, Env
from tests.daemon import Daemon
from tests.helpers import wait_until
from the_loop.agent import Agent, AgentKind
from the_loop.agent.attention.spawn import DELIVERY, note_delivered
from the_loop.config import load_config
from the_loop.context import open_ctx
from the_loop.harness.claude_hooks import hook_argv
from the_loop.store import attention as store
from the_loop.store import open_database


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


def delivered(env: Env, began: float) -> None:
    """The-loop records a prompt delivered to the Codex agent AGENT (work item local:cx),
    its paste begun at BEGAN, as the delivery does (``note_delivered``)."""
    ctx = open_ctx(loaded=load_config(env.config_path))
    agent = Agent(AGENT, AgentKind.WORK_ITEM, "codex", "tmux", env.root, label="local:cx")
    try:
        with ctx.db.transaction() as tx:
            note_delivered(ctx, tx, agent, began)
    finally:
        ctx.db.close()


def prompt_of(env: Env, prompt_id: str) -> store.Prompt | None:
    db = open_database(env.state_dir, env.database_url)
    try:
        return store.get_prompt(db.connect(), prompt_id)
    finally:
        db.close()


def test_without_the_loop_env_or_with_bad_input_it_does_nothing(
    loop_env: Env, daemon: Daemon
) -> None:
    bare = run_hook(loop_env.process_env(), {"hook_event_name": "Stop"})
    assert bare.returncode == 0 and bare.stdout == "" and row(loop_env) is None
    env = hook_env(loop_env, issue(loop_env))
    bad = run_hook(env, "{not json")
    assert bad.returncode == 0 and "the-loop hook:" in bad.stderr and "Traceback" not in bad.stderr
    unknown = run_hook(hook_env(loop_env, "ab" * 32), {"hook_event_name": "Stop"})
    assert unknown.returncode == 0 and "refused: unknown token" in unknown.stderr
    assert row(loop_env) is None


def test_prompt_then_stop_with_the_transcript_message(loop_env: Env, daemon: Daemon) -> None:
    root = loop_env.root / "claude-config"
    env = hook_env(loop_env, issue(loop_env, root=root))
    done = run_hook(env, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert (found := row(loop_env)) is not None and found.state == "working"
    transcript = root / "projects" / "x" / "t.jsonl"
    transcript.parent.mkdir(parents=True)
    lines = [
        {"type": "user", "message": {"role": "user", "content": "hi"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "text", "text": "Shall I also fix the docs?"}]}},
    ]  # fmt: skip
    transcript.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    run_hook(env, {"hook_event_name": "Stop", "transcript_path": str(transcript)})
    found = row(loop_env)
    assert found is not None and found.state == "waiting"
    assert found.signal == "claude-hook:Stop" and found.last_message == "Shall I also fix the docs?"


def test_a_prompt_hook_that_reaches_its_first_line_after_the_dialog_opened_is_still_older(
    loop_env: Env, daemon: Daemon, tmp_path: Path
) -> None:
    """Claude Code spawns the prompt's hook (not waited for) before the model answers with a
    dialog; on a loaded host that hook's interpreter can reach its first line only after the
    dialog's hook was applied. Its report says when the process was started, so it is still
    older than the dialog: dropped, and the agent stays on the dialog, not ``working``."""
    env = hook_env(loop_env, issue(loop_env))
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    slow = subprocess.Popen(  # started now; runs the hook once the gate opens
        ["/bin/sh", "-c", 'read _ < "$0"; exec "$@"', str(gate), *hook_argv()],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        asked = start_hook(env, permission("make deploy"))
        waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt, 20, what="the prompt")
        with gate.open("w") as opened:
            opened.write("go\n")
        _, err = slow.communicate(json.dumps({"hook_event_name": "UserPromptSubmit"}), 30)
    finally:
        slow.kill()
    assert slow.returncode == 0 and err == "", err
    found = row(loop_env)
    assert found is not None and found.prompt is not None, found and found.state
    assert (found.state, found.prompt.id) == ("needs-permission", waiting.id)
    assert loop_env.run("sessions", "deny", AGENT, "--prompt", waiting.id).exit_code == 0
    assert json.loads(output(asked))["hookSpecificOutput"]["decision"]["behavior"] == "deny"


def test_an_answer_through_the_cli_reaches_the_waiting_hook(loop_env: Env, daemon: Daemon) -> None:
    proc = start_hook(hook_env(loop_env, issue(loop_env)), permission("make deploy"))
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt and r, 20, what="the prompt")
    assert waiting.state == "needs-permission" and waiting.prompt is not None
    assert waiting.prompt.tool == "Bash" and waiting.prompt.text == "Bash: make deploy"
    wrong = loop_env.run("sessions", "allow", AGENT, "--prompt", "p00000")
    assert wrong.exit_code == 2 and "has no prompt p00000" in wrong.stderr
    bare = loop_env.run("sessions", "allow", AGENT)  # no notice quoted it yet: name it
    assert bare.exit_code == 2 and f"{waiting.prompt.id} (Bash: make deploy)" in bare.stderr
    assert "name the prompt you answer (no notice quoted it): --prompt <id>;" in bare.stderr
    allowed = loop_env.run(
        "sessions", "allow", AGENT, "--prompt", waiting.prompt.id, "--format", "json"
    )
    assert allowed.exit_code == 0, allowed.stderr
    assert json.loads(allowed.stdout)["promptId"] == waiting.prompt.id
    out = output(proc)
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    closed = wait_until(
        lambda: (p := prompt_of(loop_env, waiting.prompt.id)) and p.closed_at and p, 10
    )
    assert closed.outcome == "answered"  # the hook took the decision
    again = loop_env.run("sessions", "deny", AGENT, "--prompt", waiting.prompt.id)
    assert again.exit_code == 2 and "already allowed" in again.stderr and "stale" in again.stderr
    assert (after := row(loop_env)) is not None and after.state == "working"


def test_an_answer_named_by_the_prompt_id_alone_reaches_the_waiting_hook(
    loop_env: Env, daemon: Daemon
) -> None:
    """``the-loop allow ID`` in a terminal, the phrase the notice and ``attention`` show: the
    prompt names its agent, so no session needs naming; the answer is the same one."""
    token = issue(loop_env, work_item="local:deploy")
    proc = start_hook(hook_env(loop_env, token), permission("make deploy"))
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt, 20, what="the prompt")
    unknown = loop_env.run("allow", "p00000")
    assert unknown.exit_code == 1 and "no prompt p00000" in unknown.stderr, unknown.stderr
    malformed = loop_env.run("deny", "make-deploy")
    assert malformed.exit_code == 2 and "invalid prompt id" in malformed.stderr
    session = loop_env.run("allow", "local:deploy")  # a session, where the prompt id goes
    assert session.exit_code == 2 and "is a session, not a prompt id" in session.stderr
    assert "the-loop sessions allow local:deploy" in session.stderr, session.stderr
    assert "Traceback" not in unknown.stderr + malformed.stderr + session.stderr
    allowed = loop_env.run("allow", waiting.id.upper())
    assert allowed.exit_code == 0, allowed.stderr
    assert allowed.stdout == f"allow {waiting.id} (Bash) for local:deploy\n"
    assert json.loads(output(proc))["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    again = loop_env.run("deny", waiting.id)
    assert again.exit_code == 2 and "already allowed" in again.stderr and "stale" in again.stderr
    question = loop_env.run("answer", waiting.id, "1")
    assert question.exit_code == 2 and "stale" in question.stderr


def test_a_waiting_permission_hook_reads_nothing_while_nothing_happens(
    loop_env: Env, daemon: Daemon, state_backend: str
) -> None:
    """An agent can wait on a person for hours: its hook's wait is looked up when something
    may have answered it, not on a beat (once a second on PostgreSQL, where another
    process's write cannot be seen); an answer through the daemon still reaches it at once."""
    proc = start_hook(hook_env(loop_env, issue(loop_env)), permission("make deploy"))
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt, 20, what="the prompt")

    def looks() -> int:
        found = daemon.metric('the_loop_task_passes_total{task="hook-decisions"}')
        return int(found or 0)

    wait_until(looks, 10, what="the first look at the waited prompt")
    before = looks()
    t0 = time.monotonic()
    wait_until(lambda: time.monotonic() - t0 >= 3.0, 10, interval=0.5, what="3 s")
    assert proc.poll() is None, "the hook still waits"
    spent = looks() - before
    assert spent <= (1 if state_backend == "sqlite" else 4), f"{spent} looks in 3 s"
    body = {"decision": "allow", "promptId": waiting.id}
    answered = daemon.api("POST", f"/sessions/{AGENT}/permission", json=body)
    assert answered.status_code == 200, answered.text
    assert json.loads(output(proc))["hookSpecificOutput"]["decision"]["behavior"] == "allow"


def test_a_deny_reaches_the_hook_with_who_denied(loop_env: Env, daemon: Daemon) -> None:
    proc = start_hook(hook_env(loop_env, issue(loop_env)), permission("rm -rf build"))
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt, 20, what="the prompt")
    denied = loop_env.run("sessions", "deny", AGENT, "--prompt", waiting.id)
    assert denied.exit_code == 0, denied.stderr
    out = output(proc)
    decision = json.loads(out)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "Denied through the-loop by" in decision["message"]


def test_a_question_is_needs_input_and_not_answered_as_a_permission(
    loop_env: Env, daemon: Daemon
) -> None:
    env = hook_env(loop_env, issue(loop_env))
    note = {"hook_event_name": "Notification", "notification_type": "elicitation_dialog",
            "message": "Which branch?"}  # fmt: skip
    assert run_hook(env, note).returncode == 0
    found = row(loop_env)
    assert found is not None and found.state == "needs-input" and found.prompt is not None
    refused = loop_env.run("sessions", "allow", AGENT, "--prompt", found.prompt.id)
    assert refused.exit_code == 2 and "asks a question" in refused.stderr
    explained = json.loads(loop_env.run("attention", "explain", AGENT, "--format", "json").stdout)
    assert explained["signal"] == "claude-hook:Notification"
    assert explained["rule"] == "notification elicitation_dialog"


def test_an_idle_notification_alone_never_makes_a_session_need_a_person(
    loop_env: Env, daemon: Daemon
) -> None:
    env = hook_env(loop_env, issue(loop_env))
    run_hook(env, {"hook_event_name": "Stop", "last_assistant_message": "done, all green"})
    idle = {"hook_event_name": "Notification", "notification_type": "idle_prompt",
            "message": "Claude is waiting for your input"}  # fmt: skip
    assert run_hook(env, idle).returncode == 0
    found = row(loop_env)
    assert found is not None and found.state == "waiting" and found.prompt is None
    assert loop_env.run("attention", "--format", "json").stdout.strip() == "[]"


def test_codex_notify_records_the_turn_then_runs_the_operators_program(
    loop_env: Env, daemon: Daemon, tmp_path: Path
) -> None:
    seen = tmp_path / "seen.txt"
    program = tmp_path / "notify.sh"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\n', encoding="utf-8")
    program.chmod(0o755)
    turn = {"type": "agent-turn-complete", "last-assistant-message": "All four tests pass."}
    other = {"type": "something-else"}
    env = hook_env(loop_env, issue(loop_env))
    for data in (other, turn):
        argv = [sys.executable, "-m", "the_loop", "hook", "codex-notify", str(program), "x"]
        done = subprocess.run(
            [*argv, json.dumps(data)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0 and done.stdout == "", done.stderr
        if data is other:
            assert row(loop_env) is None  # only a finished turn is reported
    found = row(loop_env)
    assert found is not None and found.state == "waiting"
    assert found.signal == "codex-notify:agent-turn-complete"
    assert found.last_message == "All four tests pass."
    wait_until(lambda: seen.exists() and seen.read_text().count("\n") == 2, 30, what="chained")
    assert seen.read_text().splitlines() == ["x", json.dumps(turn)]


def test_a_codex_notify_begun_before_a_delivery_leaves_the_agent_working(
    loop_env: Env, daemon: Daemon
) -> None:
    """Codex takes input as soon as its turn ends, before its notify program reports: a
    prompt delivered in between starts a turn, and the earlier turn's notify, arriving after
    it, must not say the agent waits (each report carries when its program started)."""
    env = hook_env(loop_env, issue(loop_env))

    def notify(message: str) -> None:
        turn = {"type": "agent-turn-complete", "last-assistant-message": message}
        argv = [sys.executable, "-m", "the_loop", "hook", "codex-notify", json.dumps(turn)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr

    delivered(loop_env, time.time() - 3600)  # a delivery before the notify program below starts
    notify("the delivered prompt's turn")
    found = row(loop_env)
    assert found is not None and found.state == "waiting", found
    assert found.last_message == "the delivered prompt's turn"
    delivered(loop_env, time.time() + 3600)  # a delivery after the next notify program starts
    notify("the turn before that delivery")
    found = row(loop_env)
    assert found is not None and (found.state, found.signal) == ("working", DELIVERY), found
    assert found.last_message == "the delivered prompt's turn"


def test_a_codex_turn_reported_before_its_delivery_was_recorded_stays_reported(
    loop_env: Env, daemon: Daemon
) -> None:
    """A prompt's turn can end, and its notify be applied, between the paste and the
    transaction that records the delivery (a fast turn, a busy daemon): the delivery then
    leaves the reported ``waiting`` alone, where it used to say ``working`` until a next turn
    that never came."""
    env = hook_env(loop_env, issue(loop_env))
    began = time.time()  # the paste begins
    turn = {"type": "agent-turn-complete", "last-assistant-message": "done at once"}
    argv = [sys.executable, "-m", "the_loop", "hook", "codex-notify", json.dumps(turn)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    delivered(loop_env, began)  # recorded after the turn was reported
    found = row(loop_env)
    assert found is not None and (found.state, found.last_message) == ("waiting", "done at once")


def test_a_codex_notify_of_a_turn_before_the_running_one_leaves_the_agent_working(
    loop_env: Env, daemon: Daemon
) -> None:
    """Codex may start a turn's notify program only after it took a delivered prompt and
    started the next turn: its rollout, whose last turn boundary is that turn's start, says
    the notify is of a turn before the running one, and the agent stays working. A notify of
    the running turn, or of the one the rollout says ended last, is applied; one of a turn
    before that, started later still, changes nothing (the newer turn's answer stays)."""
    home = loop_env.root / "codex-home"
    env = hook_env(loop_env, issue(loop_env, root=home))
    day = home / "sessions" / "2026" / "12" / "05"
    day.mkdir(parents=True)
    rollout = day / "rollout-2026-12-05T08-00-00-thread-1.jsonl"

    def boundary(kind: str, turn: str) -> None:
        payload: dict[str, Any] = {"type": kind}
        if kind == "task_started":
            payload["turn_attribution"] = {"turn_id": turn, "turn_trigger": "user"}
        else:
            payload["turn_id"] = turn
        with rollout.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"type": "event_msg", "payload": payload}) + "\n")

    def notify(turn: str, message: str) -> store.Row:
        data = {"type": "agent-turn-complete", "thread-id": "thread-1", "turn-id": turn,
                "last-assistant-message": message}  # fmt: skip
        argv = [sys.executable, "-m", "the_loop", "hook", "codex-notify", json.dumps(data)]
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stderr == "", done.stderr
        found = row(loop_env)
        assert found is not None
        return found

    boundary("task_started", "turn-1")
    boundary("task_complete", "turn-1")
    found = notify("turn-1", "the first turn's answer")
    assert (found.state, found.last_message) == ("waiting", "the first turn's answer"), found
    boundary("task_started", "turn-2")  # a delivered prompt's turn, started by Codex at once
    delivered(loop_env, time.time())
    found = notify("turn-1", "the first turn's answer, told again late")
    assert (found.state, found.signal) == ("working", DELIVERY), found
    boundary("task_complete", "turn-2")
    found = notify("turn-2", "the second turn's answer")
    assert (found.state, found.last_message) == ("waiting", "the second turn's answer"), found
    found = notify("turn-1", "the first turn's answer, told after the second's")
    assert (found.state, found.last_message) == ("waiting", "the second turn's answer"), found
    boundary("task_started", "turn-3")
    boundary("turn_aborted", "turn-3")  # Esc
    found = notify("turn-2", "the second turn's answer, told after an interruption")
    assert found.last_message == "the second turn's answer", found
