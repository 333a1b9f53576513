"""Every grammar matches whole strings: a trailing newline (or any other tail) is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop.errors import BadInput
from the_loop.refs import (
    WorkItemRef,
    is_loop_target,
    safe_session_id,
    validate_owner_repo,
    validate_standing_name,
)
from the_loop.runner.base import KeyedLock
from the_loop.runner.tmux import TmuxRunner

pytestmark = pytest.mark.security

TAILS = ["\n", "\r\n", " ", "\n-x"]


@pytest.mark.parametrize("tail", TAILS)
def test_standing_names_ids_and_repos_refuse_a_tail(tail: str) -> None:
    assert validate_standing_name("probe") == "probe"
    with pytest.raises(BadInput):
        validate_standing_name("probe" + tail)
    assert safe_session_id("abc-1") == "abc-1"
    with pytest.raises(BadInput):
        safe_session_id("abc-1" + tail)
    assert validate_owner_repo("octo/repo") == ("octo", "repo")
    with pytest.raises(BadInput):
        validate_owner_repo("octo/repo" + tail)
    with pytest.raises(BadInput):
        validate_owner_repo("octo" + tail + "/repo")
    with pytest.raises(BadInput):
        WorkItemRef("octo", "repo" + tail, 1)
    with pytest.raises(BadInput):
        WorkItemRef("octo", "repo", 1, host="ghe.example.com" + tail)


@pytest.mark.parametrize("tail", TAILS)
def test_targets_lock_keys_sockets_and_buffers_refuse_a_tail(tail: str, tmp_path: Path) -> None:
    assert is_loop_target("loop-x")
    assert not is_loop_target("loop-x" + tail)
    locks = KeyedLock(tmp_path / "locks", "item")
    assert locks.path_for("key-1").name == "item--key-1.lock"
    with pytest.raises(BadInput):
        locks.path_for("key-1" + tail)
    with pytest.raises(BadInput):
        TmuxRunner("sock" + tail, work_dir=tmp_path)
    runner = TmuxRunner("the-loop-test-grammar", work_dir=tmp_path)
    assert runner.has_buffer("tl-a" + tail).answer == "refused"
    assert runner.kill_session("loop-x" + tail).answer == "refused"
    assert runner.attach_command("loop-x" + tail).answer == "refused"


def test_the_cli_refuses_a_standing_name_with_a_trailing_newline(loop_env: Env) -> None:
    loop_env.write_config(standing={"enabled": False})
    result = loop_env.run("standing", "create", "probe\n", "--no-start")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "invalid standing session name" in result.stderr
    listed = loop_env.run("standing", "list", "--format", "json")
    assert listed.exit_code == 0 and "probe" not in listed.stdout
