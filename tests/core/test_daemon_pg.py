"""The daemon with its state in PostgreSQL: it starts, reports and stops as on SQLite, a second
daemon with the same node name on the same database is refused until the first is gone
(SIGKILL included), and a
database that turns read-only is answered 503 until it is writable again."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.conftest import Env, new_env
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.pg import PgServer
from tests.work import Work
from the_loop import events as ev
from the_loop.daemon.serve import read_info
from the_loop.store import open_database


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


def test_start_status_stop_on_postgresql(loop_env: Env) -> None:
    started = loop_env.run("start")
    assert started.exit_code == 0, started.stderr
    status = json.loads(loop_env.run("status", "--format", "json").stdout)
    assert status["healthy"] is True and status["running"] is True
    stopped = loop_env.run("stop")
    assert stopped.exit_code == 0, stopped.stderr
    db = open_database(loop_env.state_dir, loop_env.database_url)
    types = [e.type for e in ev.query(db, ev.EventFilter())]
    assert "daemon.started" in types and "daemon.stopped" in types
    assert not (loop_env.state_dir / "the-loop.db").exists()


def test_a_second_daemon_with_the_same_node_name_is_refused(loop_env: Env, tmp_path: Path) -> None:
    other = new_env(tmp_path / "other", loop_env.database_url)
    first = loop_env.popen("serve")
    try:
        wait_until(lambda: read_info(loop_env.state_dir), timeout=60, what="daemon info")
        second = other.run("serve", timeout=60)
        assert second.exit_code == 1
        assert "another the-loop daemon already runs as node" in second.stderr
        assert "another `node.name`" in second.stderr
        assert "Traceback" not in second.stderr
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    # the killed daemon's connection is gone, and its lock with it
    started = other.run("start", timeout=60)
    assert started.exit_code == 0, started.stderr
    assert other.run("stop").exit_code == 0


def _terminate_connections(server: PgServer, url: str) -> None:
    name = url.rsplit("/", 1)[1]
    server.admin(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        f" WHERE datname = '{name}' AND pid <> pg_backend_pid()"
    )


def test_a_read_only_database_answers_503_then_recovers(
    work: Work, pg_server: PgServer, db_url: str
) -> None:
    work.configure(github={"enabled": True})
    daemon = Daemon(work)
    daemon.start()
    try:
        name = db_url.rsplit("/", 1)[1]
        pg_server.admin(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        _terminate_connections(pg_server, db_url)
        refused = daemon.post("issue_comment", P.issue_comment_event("hello"), "ro-1")
        assert refused.status_code == 503, refused.text
        assert "cannot write the state database" in refused.text
        assert "Traceback" not in daemon.log()
        pg_server.admin(f'ALTER DATABASE "{name}" SET default_transaction_read_only = off')
        _terminate_connections(pg_server, db_url)

        def accepted() -> bool:
            return daemon.post(
                "issue_comment", P.issue_comment_event("hi"), "ro-2"
            ).status_code in (
                202,
                200,
            )

        wait_until(accepted, timeout=60, what="a delivery accepted again")
        health = daemon.api("GET", "/health")
        assert health.status_code == 200, health.text
    finally:
        daemon.stop()
