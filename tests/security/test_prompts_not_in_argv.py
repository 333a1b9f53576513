"""Prompts never reach an interactive harness through its argv (world-readable in /proc): the
first prompt is delivered like every later one, once the agent takes input."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import payloads as P
from tests.standing.conftest import Standing
from tests.work import Work

pytestmark = pytest.mark.security

TARGET = "loop-github-octo-repo-15"


def _cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()


def _pane_pid(tmux: object, target: str) -> int:
    out = tmux("list-panes", "-t", f"={target}:", "-F", "#{pane_pid}")  # type: ignore[operator]
    return int(out.stdout.split()[0])


def test_a_work_item_prompt_is_not_in_the_harness_argv(work: Work) -> None:
    payload = P.issue_comment_event("the-loop do fix it tok-secret-instruction")
    r = work.dispatch("issue_comment", payload, "argv-1")
    assert "spawned" in r.stdout, r.stdout + r.stderr
    sid = str(work.session_json("github:octo/repo#15")["id"])
    assert "tok-secret-instruction" in work.wait_prompts(sid, 1)[0]
    cmdline = _cmdline(_pane_pid(work.tmux, TARGET))
    assert "tok-secret-instruction" not in cmdline and "fake_agent" in cmdline, cmdline


def test_a_standing_brief_is_not_in_the_harness_argv(st: Standing) -> None:
    st.ok("standing", "create", "probe", "--prompt", "brief tok-secret-brief")
    conversation = st.conversation("probe")
    assert st.wait_prompts(conversation, 1)[0].rstrip().endswith("tok-secret-brief")
    cmdline = _cmdline(_pane_pid(st.tmux, "loop-standing-probe"))
    assert "tok-secret-brief" not in cmdline and "fake_agent" in cmdline, cmdline
