"""The daemon: one per state dir, start/status/stop, health endpoint, events, reload."""

from __future__ import annotations

import json
import signal
import time

import httpx

from tests.conftest import Env
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.daemon import read_info
from the_loop.store import open_database


def test_start_status_stop_status(loop_env: Env) -> None:
    started = loop_env.run("start")
    assert started.exit_code == 0, started.stderr
    assert "running at http://127.0.0.1:" in started.stdout
    status = loop_env.run("status", "--format", "json")
    assert status.exit_code == 0, status.stdout
    body = json.loads(status.stdout)
    assert body["healthy"] is True and body["running"] is True
    info = read_info(loop_env.state_dir)
    assert info is not None
    assert httpx.get(f"{info.url}/api/v1/health").status_code == 401
    token_file = loop_env.state_dir / "api-token"
    assert token_file.stat().st_mode & 0o777 == 0o600
    auth = {"Authorization": f"Bearer {token_file.read_text().strip()}"}
    assert httpx.get(f"{info.url}/api/v1/health", headers=auth).json()["status"] == "ok"
    assert "the-loop" in httpx.get(f"{info.url}/").text
    t0 = time.monotonic()
    stopped = loop_env.run("stop")
    assert stopped.exit_code == 0 and "stopped" in stopped.stdout
    assert time.monotonic() - t0 < 5
    after = loop_env.run("status")
    assert after.exit_code == 1
    assert "stopped" in after.stdout
    types = [e.type for e in ev.query(open_database(loop_env.state_dir), ev.EventFilter())]
    assert "daemon.started" in types and "daemon.stopped" in types


def test_second_serve_on_the_same_state_dir_is_refused(loop_env: Env) -> None:
    first = loop_env.popen("serve")
    try:
        wait_until(lambda: read_info(loop_env.state_dir), timeout=20, what="daemon info")
        second = loop_env.run("serve", timeout=30)
        assert second.exit_code == 1
        assert "another the-loop daemon already serves the state dir" in second.stderr
        assert "Traceback" not in second.stderr
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=5) == 0


def test_sigterm_stops_serve_promptly_and_releases_the_lock(loop_env: Env) -> None:
    proc = loop_env.popen("serve")
    wait_until(lambda: read_info(loop_env.state_dir), timeout=20)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=5) == 0
    assert time.monotonic() - t0 < 5
    assert read_info(loop_env.state_dir) is None
    again = loop_env.run("start")
    assert again.exit_code == 0, again.stderr
    assert loop_env.run("stop").exit_code == 0


def test_stop_when_not_running_says_so(loop_env: Env) -> None:
    result = loop_env.run("stop")
    assert result.exit_code == 0 and "not running" in result.stdout


def test_invalid_config_prevents_start(loop_env: Env) -> None:
    loop_env.config_path.write_text("server:\n  port: nope\n")
    result = loop_env.run("serve")
    assert result.exit_code == 2
    assert "server.port" in result.stderr
    assert read_info(loop_env.state_dir) is None


def test_config_reload_while_running(loop_env: Env) -> None:
    assert loop_env.run("start").exit_code == 0
    try:
        db = open_database(loop_env.state_dir)

        def types() -> list[str]:
            return [e.type for e in ev.query(db, ev.EventFilter(types=("config.*",)))]

        loop_env.config_path.write_text(loop_env.config_path.read_text() + "bogus: 1\n")
        wait_until(lambda: "config.reload_failed" in types(), timeout=10)
        loop_env.write_config(routing={"authorizedUsers": ["alice"]}, server={"port": 1})
        wait_until(lambda: "config.reloaded" in types(), timeout=10)
        reloaded = ev.query(db, ev.EventFilter(types=("config.reloaded",)))[-1]
        assert reloaded.payload["restartNeeded"] == ["server.host/port"]
        loop_env.write_config(
            routing={"authorizedUsers": ["alice"]},
            github={"webhook": {"events": ["issue_comment"]}},
        )

        def lacks_close_events() -> bool:
            warnings = ev.query(db, ev.EventFilter(types=("config.warning",)))
            return any("lacks issues, pull_request" in w.payload["message"] for w in warnings)

        wait_until(lacks_close_events, timeout=10, what="the events-filter warning on reload")
        assert loop_env.run("status").exit_code == 0
    finally:
        loop_env.run("stop")
