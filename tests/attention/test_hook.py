"""``the-loop hook`` as Claude Code runs it: a real process, the hook's JSON on stdin, a real
database; answers given through the CLI reach a waiting permission hook."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import BACKENDS, Env
from tests.helpers import wait_until
from the_loop.store import attention as store
from the_loop.store import open_database

AGENT = "agent-under-test"
HOOK = [sys.executable, "-m", "the_loop", "hook"]


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL (the hook's own connection)."""
    return str(request.param)


def hook_env(env: Env, **extra: str) -> dict[str, str]:
    out = env.process_env()
    out.update(
        {
            "THE_LOOP_AGENT": AGENT,
            "THE_LOOP_DB": env.database_url or str(env.state_dir / "the-loop.db"),
        }
    )
    out.update(extra)
    return out


def run_hook(env: dict[str, str], data: Any) -> subprocess.CompletedProcess[str]:
    body = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run(
        [sys.executable, "-m", "the_loop", "hook"],
        input=body,
        text=True,
        env=env,
        capture_output=True,
        timeout=60,
        check=False,
    )


def start_hook(env: dict[str, str], data: Any) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "the_loop", "hook"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(data))
    proc.stdin.close()
    return proc


def row(env: Env) -> store.Row | None:
    db = open_database(env.state_dir, env.database_url)
    try:
        return store.get(db.connect(), AGENT)
    finally:
        db.close()


def permission(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def test_without_the_loop_env_or_with_bad_input_it_does_nothing(loop_env: Env) -> None:
    open_database(loop_env.state_dir, loop_env.database_url).close()
    bare = run_hook(loop_env.process_env(), {"hook_event_name": "Stop"})
    assert bare.returncode == 0 and bare.stdout == "" and row(loop_env) is None
    bad = run_hook(hook_env(loop_env), "{not json")
    assert bad.returncode == 0 and "the-loop hook:" in bad.stderr and "Traceback" not in bad.stderr
    missing = run_hook(hook_env(loop_env, THE_LOOP_DB="/nonexistent/x.db"), {})
    assert missing.returncode == 0 and "Traceback" not in missing.stderr


def test_prompt_then_stop_with_the_transcript_message(loop_env: Env, tmp_path: Path) -> None:
    open_database(loop_env.state_dir, loop_env.database_url).close()
    env = hook_env(loop_env)
    assert run_hook(env, {"hook_event_name": "UserPromptSubmit", "prompt": "hi"}).returncode == 0
    assert (found := row(loop_env)) is not None and found.state == "working"
    transcript = tmp_path / "t.jsonl"
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


def test_an_answer_through_the_cli_reaches_the_waiting_hook(loop_env: Env) -> None:
    open_database(loop_env.state_dir, loop_env.database_url).close()
    proc = start_hook(hook_env(loop_env), permission("make deploy"))
    waiting = wait_until(lambda: (r := row(loop_env)) and r.prompt and r, 20, what="the prompt")
    assert waiting.state == "needs-permission" and waiting.prompt is not None
    assert waiting.prompt.tool == "Bash" and waiting.prompt.text == "Bash: make deploy"
    wrong = loop_env.run("sessions", "allow", AGENT, "--prompt", "p00000")
    assert wrong.exit_code == 2 and "has no prompt p00000" in wrong.stderr
    allowed = loop_env.run("sessions", "allow", AGENT, "--format", "json")
    assert allowed.exit_code == 0, allowed.stderr
    assert json.loads(allowed.stdout)["promptId"] == waiting.prompt.id
    proc.wait(timeout=20)
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert json.loads(out) == {
        "hookSpecificOutput": {
            "hookEventName": "PermissionRequest",
            "decision": {"behavior": "allow"},
        }
    }
    again = loop_env.run("sessions", "deny", AGENT)
    assert again.exit_code == 2 and "no pending permission prompt" in again.stderr
    again = loop_env.run("sessions", "deny", AGENT, "--prompt", waiting.prompt.id)
    assert again.exit_code == 2 and "already allowed" in again.stderr and "stale" in again.stderr
    assert (after := row(loop_env)) is not None and after.state == "working"


def test_timeout_denies_or_leaves_the_prompt_to_the_agent(loop_env: Env) -> None:
    open_database(loop_env.state_dir, loop_env.database_url).close()
    deny = hook_env(loop_env, THE_LOOP_ANSWER_TIMEOUT="0.3", THE_LOOP_ON_TIMEOUT="deny")
    denied = run_hook(deny, permission("rm -rf build"))
    decision = json.loads(denied.stdout)["hookSpecificOutput"]["decision"]
    assert decision["behavior"] == "deny" and "the-loop via timeout" in decision["message"]
    leave = hook_env(loop_env, THE_LOOP_ANSWER_TIMEOUT="0.3", THE_LOOP_ON_TIMEOUT="leave")
    left = run_hook(leave, permission("rm -rf dist"))
    assert left.returncode == 0 and left.stdout == ""
    found = row(loop_env)
    assert found is not None and found.state == "needs-permission" and found.prompt is not None
    assert found.prompt.outcome == "timed-out"
    late = loop_env.run("sessions", "allow", AGENT)
    assert late.exit_code == 2 and "timed-out" in late.stderr


def test_a_question_is_needs_input_and_not_answered_as_a_permission(loop_env: Env) -> None:
    open_database(loop_env.state_dir, loop_env.database_url).close()
    env = hook_env(loop_env)
    note = {"hook_event_name": "Notification", "notification_type": "idle_prompt",
            "message": "Claude is waiting for your input"}  # fmt: skip
    run_hook(env, note)
    found = row(loop_env)
    assert found is not None and found.state == "needs-input" and found.prompt is not None
    refused = loop_env.run("sessions", "allow", AGENT)
    assert refused.exit_code == 2 and "asks a question" in refused.stderr
    listed = json.loads(loop_env.run("attention", "--format", "json").stdout)
    assert listed == []  # not a live session of the-loop: nothing to list
    explained = json.loads(loop_env.run("attention", "explain", AGENT, "--format", "json").stdout)
    assert explained["signal"] == "claude-hook:Notification"
    assert explained["rule"] == "notification idle_prompt"


def test_codex_notify_records_the_turn_then_runs_the_operators_program(
    loop_env: Env, tmp_path: Path
) -> None:
    open_database(loop_env.state_dir).close()
    seen = tmp_path / "seen.txt"
    program = tmp_path / "notify.sh"
    program.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {seen}\n', encoding="utf-8")
    program.chmod(0o755)
    turn = {"type": "agent-turn-complete", "last-assistant-message": "All four tests pass."}
    other = {"type": "something-else"}
    for data in (other, turn):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "the_loop",
                "hook",
                "codex-notify",
                str(program),
                "x",
                json.dumps(data),
            ],
            env=hook_env(loop_env),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0 and done.stdout == "", done.stderr
        if data is other:
            assert row(loop_env) is None  # only a finished turn is recorded
    found = row(loop_env)
    assert found is not None and found.state == "waiting"
    assert found.signal == "codex-notify:agent-turn-complete"
    assert found.last_message == "All four tests pass."
    wait_until(lambda: seen.exists() and seen.read_text().count("\n") == 2, 30, what="chained")
    assert seen.read_text().splitlines() == ["x", json.dumps(turn)]
