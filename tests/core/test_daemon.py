"""The daemon: one per state dir, start/status/stop, health endpoint, events, reload."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.conftest import Env
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.daemon.serve import read_info
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
    assert "the-loop" in httpx.get(f"{info.url}/login").text
    t0 = time.monotonic()
    stopped = loop_env.run("stop")
    assert stopped.exit_code == 0, stopped.stderr
    assert stopped.stdout.startswith(f"the-loop stopped (pid {info.pid}, ")
    assert time.monotonic() - t0 < 5
    assert not alive(info.pid), "stop returned while the daemon process still ran"
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
    assert result.exit_code == 0 and result.stdout == "the-loop daemon is not running\n"


def alive(pid: int) -> bool:
    """True while PID names a running process (a zombie has exited)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


def test_stop_returns_only_once_the_daemon_process_has_exited(loop_env: Env) -> None:
    """Several rounds: the lock goes before the interpreter has finished, so a stop that
    waited for the lock alone returned while the process still ran."""
    for _ in range(3):
        assert loop_env.run("start").exit_code == 0
        info = read_info(loop_env.state_dir)
        assert info is not None and alive(info.pid)
        stopped = loop_env.run("stop")
        assert stopped.exit_code == 0, stopped.stderr
        assert not alive(info.pid), "stop returned while the daemon process still ran"
        assert read_info(loop_env.state_dir) is None


def test_stop_kills_a_daemon_that_ignores_sigterm_and_says_so(loop_env: Env) -> None:
    """A process holding the lock and ignoring SIGTERM (a wedged daemon) is killed after
    --timeout; stop reports it and exits 1, once the process is gone."""
    code = (
        "import signal, sys, time\n"
        "from pathlib import Path\n"
        "from the_loop.instance import DaemonInfo, acquire_lock, write_info\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "state = Path(sys.argv[1])\n"
        "lock = acquire_lock(state)\n"
        "import os\n"
        "write_info(state, DaemonInfo(pid=os.getpid(), url='http://127.0.0.1:9', "
        "host='127.0.0.1', port=9, version='x', started_at=time.time()))\n"
        "print('ready', flush=True)\n"
        "signal.pause()\n"
    )
    wedged = subprocess.Popen(
        [sys.executable, "-c", code, str(loop_env.state_dir)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert wedged.stdout is not None and wedged.stdout.readline() == "ready\n"
        result = loop_env.run("stop", "--keep-standing", "--timeout", "0.5")
        assert result.exit_code == 1
        assert f"the daemon (pid {wedged.pid}) did not stop within 0.5s; killed it" in result.stderr
        assert wedged.wait(timeout=5) == -signal.SIGKILL
    finally:
        wedged.kill()
        wedged.wait()


def test_start_when_already_running_says_so_and_exits_0(loop_env: Env) -> None:
    assert loop_env.run("start").exit_code == 0
    try:
        info = read_info(loop_env.state_dir)
        assert info is not None
        again = loop_env.run("start")
        assert again.exit_code == 0, again.stderr
        assert again.stdout == f"the-loop is already running at {info.url} (pid {info.pid})\n"
        assert read_info(loop_env.state_dir) == info
    finally:
        assert loop_env.run("stop").exit_code == 0


def test_healthz_and_the_first_page_need_no_token_and_say_nothing_else(loop_env: Env) -> None:
    serve = loop_env.popen("serve")
    try:
        info = wait_until(lambda: read_info(loop_env.state_dir), timeout=20, what="daemon")
        live = httpx.get(f"{info.url}/healthz")
        assert live.status_code == 200 and live.json() == {"ok": True}
        first = httpx.get(f"{info.url}/")  # the dashboard: its login page, which says nothing
        assert first.status_code == 303 and first.headers["location"].startswith("/login")
        page = httpx.get(f"{info.url}{first.headers['location']}")
        assert page.status_code == 200 and 'name="token"' in page.text
        assert str(loop_env.state_dir) not in page.text and '/api/v1/health"' not in page.text
        assert httpx.get(f"{info.url}/api/v1/health").status_code == 401
        assert httpx.get(f"{info.url}/health").status_code == 401
        assert httpx.get(f"{info.url}/metrics").status_code == 401
    finally:
        serve.send_signal(signal.SIGTERM)
        _, banner = serve.communicate(timeout=10)
    assert f"  health:    {info.url}/healthz (no token needed)" in banner
    assert "/api/v1/health" not in banner
    assert f"Authorization: Bearer $(cat {loop_env.state_dir / 'api-token'})" in banner


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
