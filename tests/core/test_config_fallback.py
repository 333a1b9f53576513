"""A bad config never locks the operator out (issue 13.2; docs/decisions/0017).

The installed CLI runs as a subprocess against a daemon that started on a valid file; the file
then gets one typo. Commands that read state or reach the daemon keep working on the config
the daemon recorded, warning that the file is invalid; `start` and `config validate` still
refuse the file with exit 2.
"""

from __future__ import annotations

import json

from tests.conftest import Env
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.daemon.serve import read_info
from the_loop.store import open_database


def _typo(env: Env) -> int:
    """Misspell ``tmux.socket`` in the live file; return the line of the typo."""
    text = env.config_path.read_text()
    assert "  socket: " in text
    env.config_path.write_text(text.replace("  socket: ", "  sockte: "))
    return next(i for i, line in enumerate(text.splitlines(), 1) if "  socket: " in line)


def _warned(stderr: str, line: int) -> None:
    assert "warning:" in stderr and "is invalid" in stderr, stderr
    assert f"tmux.sockte: unknown key; did you mean 'socket'? (line {line})" in stderr, stderr
    assert "using the config the running daemon" in stderr, stderr
    assert "Traceback" not in stderr


def test_a_typo_in_the_live_file_keeps_status_events_and_stop_working(loop_env: Env) -> None:
    started = loop_env.run("start")
    assert started.exit_code == 0, started.stderr
    try:
        line = _typo(loop_env)

        status = loop_env.run("status", "--format", "json")
        assert status.exit_code == 0, status.stderr
        assert json.loads(status.stdout)["healthy"] is True
        _warned(status.stderr, line)

        events = loop_env.run("events", "--limit", "5", "--format", "json")
        assert events.exit_code == 0, events.stderr
        assert any(e["type"] == "daemon.started" for e in json.loads(events.stdout))
        _warned(events.stderr, line)

        for args in (("sessions", "list"), ("standing", "list")):
            result = loop_env.run(*args)
            assert result.exit_code == 0, (args, result.stderr)
            _warned(result.stderr, line)

        validate = loop_env.run("config", "validate")
        assert validate.exit_code == 2
        assert "is invalid (1 problem)" in validate.stderr
        assert f"tmux.sockte: unknown key; did you mean 'socket'? (line {line})" in validate.stderr

        again = loop_env.run("start")
        assert again.exit_code == 2, again.stdout
        assert "tmux.sockte: unknown key" in again.stderr
        assert "Traceback" not in again.stderr

        stopped = loop_env.run("stop")
        assert stopped.exit_code == 0, stopped.stderr
        assert "stopped" in stopped.stdout
        _warned(stopped.stderr, line)
        assert read_info(loop_env.state_dir) is None
        types = [e.type for e in ev.query(open_database(loop_env.state_dir), ev.EventFilter())]
        assert "daemon.stopped" in types

        after = loop_env.run("sessions", "list")
        assert after.exit_code == 0, after.stderr
        assert "using the config the daemon last ran on" in after.stderr
    finally:
        loop_env.write_config()
        loop_env.run("stop")


def test_with_nothing_recorded_an_invalid_file_fails_with_every_problem(loop_env: Env) -> None:
    line = _typo(loop_env)
    result = loop_env.run("status")
    assert result.exit_code == 2
    assert "is invalid (1 problem)" in result.stderr
    assert f"tmux.sockte: unknown key; did you mean 'socket'? (line {line})" in result.stderr
    assert "warning:" not in result.stderr


def test_a_reload_of_a_typo_is_refused_once_and_the_daemon_keeps_its_config(
    loop_env: Env,
) -> None:
    assert loop_env.run("start").exit_code == 0
    try:
        db = open_database(loop_env.state_dir)
        _typo(loop_env)

        def failed() -> list[ev.Event]:
            return ev.query(db, ev.EventFilter(types=("config.reload_failed",)))

        wait_until(lambda: failed(), timeout=15, what="config.reload_failed")
        problems = failed()[0].payload["problems"]
        assert problems == [next(p for p in problems if "did you mean 'socket'?" in p)]
        assert loop_env.run("status").exit_code == 0
    finally:
        loop_env.write_config()
        loop_env.run("stop")
