"""The ``Stop`` hook keeps the conversation's transcript in the store on a shared database:
each turn copies only the whole lines the file gained, a repeated hook adds nothing; with
SQLite (nothing moves to another host) nothing is copied. Real hook processes reporting to a
real daemon; the transcript lies in the agent's own harness directory."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest

from tests.attention.hooks import hook_env, issue, run_hook, start_hook
from tests.conftest import BACKENDS, Env
from tests.daemon import Daemon, served
from tests.helpers import threading_wait, wait_until
from tests.work import Work
from the_loop.store import open_database
from the_loop.store import transcripts as store

CONV = "0b3a9a3c-5f0e-4a57-8c43-1d6f3c2e9b71"


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _line(role: str, text: str) -> str:
    return json.dumps({"type": role, "message": {"role": role, "content": text}}) + "\n"


def _stop(env: dict[str, str], path: Path, event: str = "Stop") -> None:
    data = {"hook_event_name": event, "session_id": CONV, "transcript_path": str(path)}
    done = run_hook(env, data)
    assert done.returncode == 0 and not done.stderr, done.stderr


def _kept(env: Env) -> tuple[store.Stored | None, bytes | None]:
    db = open_database(env.state_dir, env.database_url)
    try:
        return store.get(db.connect(), CONV), store.load(db.connect(), CONV)
    finally:
        db.close()


def _transcript(loop_env: Env) -> tuple[dict[str, str], Path]:
    root = loop_env.root / "claude-config"
    path = root / "projects" / "-work" / f"{CONV}.jsonl"
    path.parent.mkdir(parents=True)
    return hook_env(loop_env, issue(loop_env, root=root)), path


def _turn_without_its_reply(loop_env: Env) -> tuple[dict[str, str], Path, str, dict[str, str]]:
    """A transcript holding a turn's question only, and the data of the ``Stop`` hook that
    carries the turn's last message (Claude Code writes it to the file after its hook)."""
    env, path = _transcript(loop_env)
    ask = _line("user", "count the stars")
    path.write_text(ask, encoding="utf-8")
    data = {
        "hook_event_name": "Stop",
        "session_id": CONV,
        "transcript_path": str(path),
        "last_assistant_message": "42",
    }
    return env, path, ask, data


def test_each_turn_copies_only_the_new_whole_lines(loop_env: Env, daemon: Daemon) -> None:
    env, path = _transcript(loop_env)
    turn1 = _line("user", "count the stars") + _line("assistant", "42")
    path.write_text(turn1, encoding="utf-8")
    _stop(env, path)
    found, data = _kept(loop_env)
    if loop_env.database_url is None:
        assert found is None and data is None  # SQLite: one host, nothing to move
        return
    assert found is not None and found.bytes == len(turn1.encode()) and data == turn1.encode()
    _stop(env, path)  # the same turn again: nothing new
    turn2 = _line("user", "and the moons") + _line("assistant", "many")
    partial = '{"type": "assistant", "mess'
    with path.open("a", encoding="utf-8") as handle:
        handle.write(turn2 + partial)  # a line still being written is left for the next turn
    _stop(env, path, "SessionEnd")
    found, data = _kept(loop_env)
    assert data == (turn1 + turn2).encode()
    assert found is not None and found.bytes == len((turn1 + turn2).encode())
    assert found.agent == env["THE_LOOP_AGENT"]


def test_a_missing_or_shrunk_file_changes_nothing(loop_env: Env, daemon: Daemon) -> None:
    env, path = _transcript(loop_env)
    _stop(env, path)  # no file yet
    assert _kept(loop_env) == (None, None)
    path.write_text(_line("user", "a") + _line("assistant", "b"), encoding="utf-8")
    _stop(env, path)
    before = _kept(loop_env)
    path.write_text(_line("user", "a"), encoding="utf-8")  # not the file that was stored
    _stop(env, path)
    assert _kept(loop_env)[1] == before[1]


def test_a_turns_last_message_written_after_its_stop_hook_is_kept(
    loop_env: Env, daemon: Daemon
) -> None:
    """Claude Code runs ``Stop`` before it writes the turn's last message to the transcript
    (the hook's data carries it as ``last_assistant_message``): the daemon keeps the file again
    once the message is there, seconds later too, so another node resumes with the whole
    turn."""
    if loop_env.database_url is None:
        pytest.skip("SQLite keeps no transcript")
    env, path, ask, data = _turn_without_its_reply(loop_env)
    done = run_hook(env, data)
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert _kept(loop_env)[1] == ask.encode()  # what the file held when the hook ran
    # a busy host: the message comes seconds later (the daemon once gave up after 2 s)
    later = time.monotonic() + 3
    while time.monotonic() < later:  # nothing else is kept meanwhile
        assert _kept(loop_env)[1] == ask.encode()
        threading_wait(0.2)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_line("assistant", "42"))  # the harness writes the message after its hook
    wait_until(
        lambda: _kept(loop_env)[1] == (ask + _line("assistant", "42")).encode(),
        10,
        what="the turn's last message kept",
    )


def _stopped(pid: int) -> bool:
    """Whether process PID is stopped by a signal (state ``T`` in ``/proc/PID/stat``)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def test_a_last_message_written_just_after_the_hooks_copy_is_kept(
    loop_env: Env, work: Work
) -> None:
    """The race a busy host makes likely: the harness writes the turn's last message after
    the daemon copied the transcript for its ``Stop`` report and before it looked whether the
    file ends with that message. The daemon is frozen right after the copy (SIGSTOP at
    ``after-turn-kept``), the message written, the daemon let go: it keeps the message."""
    if loop_env.database_url is None:
        pytest.skip("SQLite keeps no transcript")
    work.configure(github={"enabled": True})
    env, path, ask, data = _turn_without_its_reply(loop_env)
    with served(work, THE_LOOP_PAUSE_AT="after-turn-kept") as daemon:
        assert daemon.proc is not None
        pid = daemon.proc.pid
        hook = start_hook(env, data)
        wait_until(lambda: _stopped(pid), 30, what="the daemon frozen after its copy")
        assert _kept(loop_env)[1] == ask.encode()  # the copy lacks the message
        with path.open("a", encoding="utf-8") as handle:
            handle.write(_line("assistant", "42"))  # written now, before the daemon looks
        daemon.proc.send_signal(signal.SIGCONT)
        assert hook.wait(timeout=30) == 0
        wait_until(
            lambda: _kept(loop_env)[1] == (ask + _line("assistant", "42")).encode(),
            10,
            what="the turn's last message kept",
        )
