"""Helpers for the hook-channel tests: a token issued as a spawn issues it, the environment
an agent gets, and ``the-loop hook`` run exactly as Claude Code's settings run it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import Env
from the_loop.agent.attention.spawn import hook_dir, issue_token
from the_loop.harness.claude_hooks import hook_argv
from the_loop.hook import connect, read_line
from the_loop.store import attention as store
from the_loop.store import open_database

AGENT = "agent-under-test"


def issue(
    env: Env, agent: str = AGENT, root: Path | None = None, work_item: str | None = None
) -> str:
    """A token for AGENT, as a spawn issues one (ROOT: its harness directory)."""
    db = open_database(env.state_dir, env.database_url)
    try:
        return issue_token(
            db, agent, work_item=work_item, transcript_root=None if root is None else str(root)
        )
    finally:
        db.close()


def hook_env(env: Env, token: str, agent: str = AGENT, **extra: str) -> dict[str, str]:
    """What an agent's environment holds for its hooks."""
    out = env.process_env()
    out.update(
        {
            "THE_LOOP_AGENT": agent,
            "THE_LOOP_HOOK_TOKEN": token,
            "THE_LOOP_HOOK_DIR": str(hook_dir(env.state_dir)),
        }
    )
    out.update(extra)
    return out


def run_hook(
    env: dict[str, str], data: Any, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """One hook process (``hook_argv``: the command Claude Code runs) with DATA on stdin."""
    body = data if isinstance(data, str) else json.dumps(data)
    return subprocess.run(
        hook_argv(), input=body, text=True, env=env, capture_output=True, timeout=timeout
    )


STARTED: list[subprocess.Popen[str]] = []
"""Hook processes ``start_hook`` started in this test (a permission hook retries for as long
as it is let run: ``end_started_hooks`` ends those a failed test left waiting)."""


def end_started_hooks() -> None:
    """Kill the hook processes of this test still running."""
    while STARTED:
        proc = STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def start_hook(env: dict[str, str], data: Any) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        hook_argv(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    STARTED.append(proc)
    assert proc.stdin is not None
    proc.stdin.write(json.dumps(data))
    proc.stdin.close()
    return proc


def send_raw(env: Env, report: dict[str, Any]) -> tuple[str, str]:
    """Send REPORT over the daemon's socket as a forger would; the daemon's reply (its word
    and text)."""
    sock = connect(str(hook_dir(env.state_dir)))
    sock.settimeout(30)
    try:
        sock.sendall(json.dumps(report).encode() + b"\n")
        found = read_line(sock)
    finally:
        sock.close()
    assert found is not None
    return found


def row(env: Env, agent: str = AGENT) -> store.Row | None:
    db = open_database(env.state_dir, env.database_url)
    try:
        return store.get(db.connect(), agent)
    finally:
        db.close()


def permission(command: str) -> dict[str, Any]:
    return {
        "hook_event_name": "PermissionRequest",
        "tool_name": "Bash",
        "tool_input": {"command": command},
    }


def spool_files(env: Env) -> list[str]:
    spool = hook_dir(env.state_dir) / "spool"
    return sorted(p.name for p in spool.iterdir()) if spool.exists() else []


def output(proc: subprocess.Popen[str], timeout: float = 20) -> str:
    """What the hook process PROC printed, once it exited."""
    proc.wait(timeout=timeout)
    assert proc.stdout is not None
    return proc.stdout.read()
