"""Reload bookkeeping (issue 13.7): one edit, one ``config.reloaded``; reverting a
restart-only setting clears ``restartNeeded``; a touch without a change reloads nothing."""

from __future__ import annotations

import json
import os

from tests.conftest import Env
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.store import open_database


def test_each_edit_reloads_once_and_a_revert_clears_restart_needed(loop_env: Env) -> None:
    assert loop_env.run("start").exit_code == 0
    try:
        db = open_database(loop_env.state_dir)

        def reloads() -> list[ev.Event]:
            return ev.query(db, ev.EventFilter(types=("config.reloaded",)))

        original = loop_env.config_path.read_text()
        loop_env.write_config(server={"port": 1})
        first = wait_until(lambda: reloads(), timeout=15, what="the first reload")
        assert first[0].payload["restartNeeded"] == ["server.host/port"]
        status = loop_env.run("status", "--format", "json")
        assert json.loads(status.stdout)["health"]["detail"]["config"] == {
            "restartNeeded": ["server.host/port"]
        }

        # the same bytes again, and a touch: no new content, no reload
        loop_env.write_config(server={"port": 1})
        os.utime(loop_env.config_path)

        loop_env.config_path.write_text(original)
        second = wait_until(lambda: len(reloads()) >= 2 and reloads(), timeout=15)
        assert second[1].payload["restartNeeded"] == []
        status = loop_env.run("status", "--format", "json")
        assert "config" not in json.loads(status.stdout)["health"]["detail"]

        loop_env.write_config(routing={"authorizedUsers": ["alice"]})
        third = wait_until(lambda: len(reloads()) >= 3 and reloads(), timeout=15)
        assert [e.payload["restartNeeded"] for e in third] == [["server.host/port"], [], []]
        assert len(third) == 3
        assert loop_env.run("status").exit_code == 0
    finally:
        loop_env.run("stop")
