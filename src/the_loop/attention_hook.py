"""``the-loop hook``: one Claude Code hook, read from stdin, written to the state database.

The harness runs this on every hook the settings passed at spawn name (see
``the_loop.harness.claude_hooks``). It needs no daemon: the agent's key and the database path
come from the environment the-loop gave the agent (``THE_LOOP_AGENT``, ``THE_LOOP_DB``), and it
writes the state, the prompt and the events itself. It is run often, so it loads only the
standard library and ``the_loop.store.attention``; the console script dispatches to it before
the CLI is imported.

A ``PermissionRequest`` waits (polling the database) for an answer given through the-loop and
prints Claude Code's decision on stdout; without one in ``THE_LOOP_ANSWER_TIMEOUT`` seconds it
denies (``THE_LOOP_ON_TIMEOUT=deny``) or prints nothing, and the harness shows its own dialog.
It never fails the harness: any problem ends it with status 0 and a line on stderr.

Run as ``the-loop hook codex-notify [PROGRAM …] JSON`` it is Codex's turn-complete ``notify``
program (``the_loop.harness.codex_notify``): ``agent-turn-complete`` → ``waiting`` with the
agent's last message; then the operator's own notify PROGRAM, if any, runs with the same JSON.
"""

from __future__ import annotations

import os
import sys
import time

from the_loop import hook_json as json
from the_loop.errors import StateError
from the_loop.hook_sqlite import sqlite
from the_loop.store import attention as store
from the_loop.store import transcripts

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook runs often: it imports no more than it needs (no json, re, typing)
    from collections.abc import Callable, Mapping
    from typing import Any

    from the_loop.store.conn import Connection

AGENT_ENV = "THE_LOOP_AGENT"
DB_ENV = "THE_LOOP_DB"
WORK_ITEM_ENV = "THE_LOOP_WORK_ITEM"
TIMEOUT_ENV = "THE_LOOP_ANSWER_TIMEOUT"
ON_TIMEOUT_ENV = "THE_LOOP_ON_TIMEOUT"
POLL_SECONDS = 0.05
MAX_STDIN = 1 << 20
INPUT_LIMIT = 2000
QUESTION_TYPES = frozenset({"idle_prompt", "elicitation_dialog", "agent_needs_input"})
SOURCE = "hook"
CODEX_NOTIFY = "codex-notify"


def main(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """Handle the hook whose JSON is on stdin; always returns 0 (the harness goes on)."""
    env = os.environ if env is None else env
    if args[:1] == [CODEX_NOTIFY]:
        return codex_notify(args[1:], env)
    agent, db_path = env.get(AGENT_ENV), env.get(DB_ENV)
    if not agent or not db_path:
        return 0
    try:
        data = json.loads(sys.stdin.read(MAX_STDIN) or "{}")
        if not isinstance(data, dict):
            return 0
        conn = store.connect(db_path)
        try:
            out = handle(conn, agent, data, env)
        finally:
            conn.close()
    except (OSError, ValueError, sqlite.Error, StateError) as exc:
        print(f"the-loop hook: {exc}", file=sys.stderr)
        return 0
    if out is not None:
        sys.stdout.write(json.dumps(out))
        sys.stdout.flush()
    return 0


def codex_notify(args: list[str], env: Mapping[str, str]) -> int:
    """Codex's ``notify``: ARGS is ``[PROGRAM …] JSON``; record the finished turn, then run
    PROGRAM (the operator's own notify) with the JSON. Always returns 0."""
    if not args:
        return 0
    agent, db_path = env.get(AGENT_ENV), env.get(DB_ENV)
    try:
        data = json.loads(args[-1])
        if agent and db_path and isinstance(data, dict):
            _codex_turn(db_path, agent, data, env)
    except (OSError, ValueError, sqlite.Error) as exc:
        print(f"the-loop hook: {exc}", file=sys.stderr)
    if len(args) > 1:
        _run_chained(args)
    return 0


def _codex_turn(db_path: str, agent: str, data: dict[str, Any], env: Mapping[str, str]) -> None:
    kind = str(data.get("type") or "")
    if kind != "agent-turn-complete":
        return
    message = data.get("last-assistant-message")
    thread = data.get("thread-id")
    rollout = codex_rollout(env, thread) if isinstance(thread, str) else None
    conn = store.connect(db_path)
    try:
        _write(
            conn,
            agent,
            store.WAITING,
            f"codex-notify:{kind}",
            "the turn finished",
            transcript=rollout,
            last_message=message[-4000:] if isinstance(message, str) and message else None,
            work_item=env.get(WORK_ITEM_ENV) or None,
            standing=agent.removeprefix(store.STANDING_PREFIX)
            if agent.startswith(store.STANDING_PREFIX)
            else None,
        )
    finally:
        conn.close()


def codex_rollout(env: Mapping[str, str], thread: str) -> str | None:
    """The rollout file Codex writes thread THREAD's events to (its usage is read from
    there): ``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread>.jsonl``, the newest day
    first (a thread's file stays in the directory of the day it began); None when not found."""
    if not thread or not all(c.isalnum() or c == "-" for c in thread) or len(thread) > 100:
        return None
    home = env.get("CODEX_HOME") or os.path.join(env.get("HOME") or "~", ".codex")
    root = os.path.join(os.path.expanduser(home), "sessions")
    suffix = f"-{thread}.jsonl"
    for day in _days(root):
        try:
            names = os.listdir(day)
        except OSError:
            continue
        for name in names:
            if name.startswith("rollout-") and name.endswith(suffix):
                return os.path.join(day, name)
    return None


def _days(root: str) -> list[str]:
    """ROOT's YYYY/MM/DD directories, newest first."""
    out: list[str] = []
    for depth in range(3):
        parents = [root] if depth == 0 else out
        found: list[str] = []
        for parent in parents:
            try:
                found += [os.path.join(parent, n) for n in sorted(os.listdir(parent), reverse=True)]
            except OSError:
                continue
        out = found
    return out


def _run_chained(args: list[str]) -> None:
    """Start the operator's notify program (ARGS less the JSON, which it gets last) and leave
    it running: Codex does not wait for its notify program either."""
    # lazy: only a chained notify needs it, and the hook's start-up is measured
    import subprocess

    try:
        subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        print(f"the-loop hook: cannot run {args[0]!r}: {exc}", file=sys.stderr)


def handle(
    conn: Connection, agent: str, data: dict[str, Any], env: Mapping[str, str]
) -> dict[str, Any] | None:
    """Record what the hook DATA says about AGENT; the JSON to print, if any."""
    event = str(data.get("hook_event_name") or "")
    signal = f"claude-hook:{event}"
    where = {
        "work_item": env.get(WORK_ITEM_ENV) or None,
        "standing": agent.removeprefix(store.STANDING_PREFIX)
        if agent.startswith(store.STANDING_PREFIX)
        else None,
    }

    transcript = data.get("transcript_path")
    if isinstance(transcript, str) and transcript:
        where["transcript"] = transcript

    def write(state: str, rule: str, **kw: Any) -> store.Change | None:
        return _write(conn, agent, state, signal, rule, **where, **kw)

    if event == "UserPromptSubmit":
        write(store.WORKING, "a prompt was submitted")
    elif event == "SessionStart":
        write(store.WAITING, "the agent started and waits for input")
    elif event == "Stop":
        write(store.WAITING, "the turn finished", last_message=_last_message(data))
        keep_transcript(conn, agent, data, env, where)
    elif event == "SessionEnd":
        write(store.EXITED, "the agent's session ended")
        keep_transcript(conn, agent, data, env, where)
    elif event == "Notification":
        _notification(data, write)
    elif event == "PermissionRequest":
        return _permission(conn, agent, data, env, write)
    return None


def shared(env: Mapping[str, str]) -> bool:
    """True when the state lives in PostgreSQL (several nodes may share it)."""
    return (env.get(DB_ENV) or "").startswith(("postgresql://", "postgres://"))


def keep_transcript(
    conn: Connection,
    agent: str,
    data: dict[str, Any],
    env: Mapping[str, str],
    where: Mapping[str, str | None],
) -> str | None:
    """At the end of a turn, copy the lines the conversation's transcript file gained since
    the last copy into the store (``store.transcripts``), so that another node can resume it.
    Only on a shared database: with SQLite nothing moves to another host. The outcome, None
    when there was nothing to copy."""
    conversation, path = data.get("session_id"), data.get("transcript_path")
    if not shared(env) or not isinstance(conversation, str) or not isinstance(path, str):
        return None
    found = transcripts.get(conn, conversation)
    if found is not None and found.over_cap:
        return None
    start = 0 if found is None else found.bytes
    chunk, size = new_lines(path, start, transcripts.MAX_BYTES)
    if not chunk and size <= transcripts.MAX_BYTES:
        return None
    return transcripts.save(
        conn,
        conversation,
        agent,
        start,
        chunk,
        now=time.time(),
        seen=size,
        work_item=where.get("work_item"),
        standing=where.get("standing"),
    )


def new_lines(path: str, start: int, cap: int) -> tuple[bytes, int]:
    """The whole lines file PATH holds from byte START on, and the file's size (b"" when it
    has none, or is shorter than START: not the file that was stored; b"" too when it is
    larger than CAP, which is then not read)."""
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if size <= start or size > cap:
                return b"", size
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return b"", 0
    cut = data.rfind(b"\n")
    return (data[: cut + 1] if cut >= 0 else b""), size


def _write(
    conn: Connection, agent: str, state: str, signal: str, rule: str, **kw: Any
) -> store.Change | None:
    return store.write_state(conn, agent, state, signal, rule, now=time.time(), source=SOURCE, **kw)


def _notification(data: dict[str, Any], write: Callable[..., store.Change | None]) -> None:
    kind = str(data.get("notification_type") or "")
    message = str(data.get("message") or "")
    if kind == "permission_prompt":
        prompt = store.NewPrompt("permission", text=message)
        write(store.NEEDS_PERMISSION, f"notification {kind}", prompt=prompt)
    elif kind in QUESTION_TYPES:
        write(
            store.NEEDS_INPUT,
            f"notification {kind}",
            prompt=store.NewPrompt("question", text=message),
        )


def _permission(
    conn: Connection,
    agent: str,
    data: dict[str, Any],
    env: Mapping[str, str],
    write: Callable[..., store.Change | None],
) -> dict[str, Any] | None:
    tool = str(data.get("tool_name") or "")
    tool_input = data.get("tool_input")
    shown = json.dumps(tool_input, ascii=False)[:INPUT_LIMIT]
    prompt = store.NewPrompt("permission", tool=tool, input=shown, text=_summary(tool, tool_input))
    change = write(store.NEEDS_PERMISSION, f"permission request for {tool}", prompt=prompt)
    if change is None or change.prompt_id is None:
        return None
    return _await_answer(conn, change.prompt_id, env, write)


def _await_answer(
    conn: Connection,
    prompt_id: str,
    env: Mapping[str, str],
    write: Callable[..., store.Change | None],
) -> dict[str, Any] | None:
    try:
        timeout = float(env.get(TIMEOUT_ENV) or 3600)
    except ValueError:
        timeout = 3600.0
    deadline = time.monotonic() + timeout
    while True:
        found = store.get_prompt(conn, prompt_id)
        if found is None or found.closed_at is not None:
            return None
        if found.decision is not None:
            return _decided(found, write)
        if time.monotonic() >= deadline:
            return _timed_out(conn, prompt_id, env, write)
        time.sleep(POLL_SECONDS)


def _timed_out(
    conn: Connection,
    prompt_id: str,
    env: Mapping[str, str],
    write: Callable[..., store.Change | None],
) -> dict[str, Any] | None:
    found = store.give_up(conn, prompt_id, env.get(ON_TIMEOUT_ENV) == "deny", time.time())
    if found is not None and found.decision is not None:
        return _decided(found, write)
    return None


def _decided(found: store.Prompt, write: Callable[..., store.Change | None]) -> dict[str, Any]:
    who = f"{found.actor} via {found.via}"
    if found.decision == "allow":
        write(store.WORKING, f"{found.tool or 'the tool'} allowed by {who}")
        return decision_json("allow")
    write(store.WORKING, f"{found.tool or 'the tool'} denied by {who}")
    return decision_json("deny", f"Denied through the-loop by {who}.")


def decision_json(behavior: str, message: str = "") -> dict[str, Any]:
    """Claude Code's answer to a ``PermissionRequest`` hook (allow, or deny with MESSAGE)."""
    decision: dict[str, Any] = {"behavior": behavior}
    if behavior == "deny" and message:
        decision["message"] = message
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}


def _summary(tool: str, tool_input: Any) -> str:
    """One line saying what TOOL will do: the command, the file, or its input."""
    if isinstance(tool_input, dict):
        for key in ("command", "file_path", "path", "url", "pattern"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                return f"{tool}: {value}"[:INPUT_LIMIT]
    return f"{tool}: {json.dumps(tool_input, ascii=False)}"[:INPUT_LIMIT]


def _last_message(data: dict[str, Any]) -> str | None:
    """The agent's last message: from the hook itself, else the transcript's last assistant
    text; None when neither has one."""
    given = data.get("last_assistant_message")
    if isinstance(given, str) and given:
        return given[-4000:]
    path = data.get("transcript_path")
    return transcript_last_message(path) if isinstance(path, str) and path else None


def transcript_last_message(path: str, tail: int = 256 * 1024) -> str | None:
    """The text of the last assistant message in the JSONL transcript at PATH."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - tail))
            lines = handle.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        message = entry.get("message") if isinstance(entry, dict) else None
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = message.get("content")
        if isinstance(content, str):
            return content[-4000:]
        texts = [
            b.get("text", "")
            for b in content or []
            if isinstance(b, dict) and b.get("type") == "text"
        ]
        if any(texts):
            return "".join(texts)[-4000:]
    return None
