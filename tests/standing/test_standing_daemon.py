"""The daemon and standing sessions: auto-start after the service is up, `stop` stops them
first (unless --keep-standing), `status` unhealthy while an auto-start session is down."""

from __future__ import annotations

import json

from tests.helpers import wait_until
from tests.standing.conftest import Standing

TARGET = "loop-standing-supervisor"


def test_start_autostarts_stop_stops_status_reports(st: Standing) -> None:
    st.configure(declared=[{"name": "supervisor", "prompt": "watch the queue"}], enabled=True)
    started = st.env.run("start")
    assert started.exit_code == 0, started.stderr
    try:
        wait_until(lambda: st.has_session(TARGET), timeout=20, what="auto-started supervisor")
        conversation = st.conversation("supervisor")
        assert st.wait_prompts(conversation, 1)[0].rstrip().endswith("watch the queue")
        status = st.env.run("status", "--format", "json")
        assert status.exit_code == 0, status.stdout
        assert json.loads(status.stdout)["health"]["detail"]["standing"] == {
            "supervisor": "running"
        }

        assert st.ok("standing", "stop", "supervisor")
        down = st.env.run("status")
        assert down.exit_code == 1
        assert "supervisor" in down.stdout
        assert st.ok("standing", "start", "supervisor")
        assert st.env.run("status").exit_code == 0
    finally:
        stopped = st.env.run("stop")
    assert stopped.exit_code == 0
    assert "standing supervisor: stopped" in stopped.stdout
    assert not st.has_session(TARGET)
    assert st.listed()["supervisor"]["status"] == "stopped"


def test_stop_keep_standing_leaves_them_running(st: Standing) -> None:
    st.configure(declared=[{"name": "supervisor", "prompt": "watch"}], enabled=True)
    assert st.env.run("start").exit_code == 0
    wait_until(lambda: st.has_session(TARGET), timeout=20)
    result = st.env.run("stop", "--keep-standing")
    assert result.exit_code == 0 and "standing" not in result.stdout
    assert st.has_session(TARGET)
    assert st.ok("standing", "stop", "supervisor")
