"""A program the-loop did not start that takes an agent's tmux target is never pasted into,
signalled or killed — for work items and standing sessions alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.standing.conftest import Standing, alive
from tests.work import Work

pytestmark = pytest.mark.security

REF = "github:octo/repo#15"
TARGET = "loop-github-octo-repo-15"


def _foreign(tmux_run: object, target: str, sink: Path) -> int:
    """Replace TARGET with a program that looks ready for input (it shows the fake agent's
    ready line and a shell prompt) and records whatever it is sent; return its pid."""
    run = tmux_run  # the fixture's `tmux` helper
    # The newcomer is made first under another name: killing the server's only session
    # first would let the server exit under the next command ("server exited unexpectedly").
    started = run(  # type: ignore[operator]
        "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", "foreign-newcomer", "-x", "80",
        "-y", "20", f"echo '{fake_agent.READY}'; echo '$ '; cat > {sink}",
    )  # fmt: skip
    assert started.returncode == 0, started.stderr
    assert run("kill-session", "-t", f"={target}").returncode == 0  # type: ignore[operator]
    renamed = run("rename-session", "-t", "=foreign-newcomer", target)  # type: ignore[operator]
    assert renamed.returncode == 0, renamed.stderr
    pid = int(started.stdout.strip())
    wait_until(lambda: sink.exists(), timeout=10, what="the foreign program to start")
    return pid


def test_a_foreign_occupant_of_a_work_item_target_is_never_pasted_into_or_signalled(
    work: Work, tmp_path: Path
) -> None:
    r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "f-1")
    assert "spawned" in r.stdout, r.stdout
    sid = str(work.session_json(REF)["id"])
    work.wait_prompts(sid, 1)
    sink = tmp_path / "foreign.txt"
    pid = _foreign(work.tmux, TARGET, sink)

    r = work.dispatch("issue_comment", P.issue_comment_event("rm -rf tok-evil"), "f-2")
    assert "did not start" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "attach-session -r" in r.stdout + r.stderr
    assert sink.read_text() == "", "nothing may reach a foreign program"
    assert work.events("session.foreign_occupant")

    r = work.dispatch("issues", P.issues_event("closed"), "f-3")
    assert r.exit_code == 0, r.stdout + r.stderr
    assert work.session_json(REF)["status"] == "closed"
    assert alive(pid), "a foreign program is never signalled"
    assert sink.read_text() == ""
    assert len(work.prompts(sid)) == 1


def test_a_foreign_occupant_of_a_standing_target_is_never_pasted_into_or_signalled(
    st: Standing, tmp_path: Path
) -> None:
    st.ok("standing", "create", "probe", "--prompt", "brief")
    conversation = st.conversation("probe")
    st.wait_prompts(conversation, 1)
    sink = tmp_path / "foreign.txt"
    pid = _foreign(st.tmux, "loop-standing-probe", sink)

    said = st.cli("standing", "say", "probe", "--text", "rm -rf tok-evil")
    assert said.exit_code != 0 and "did not start" in said.stderr, said.stdout + said.stderr
    stopped = st.cli("standing", "stop", "probe")
    assert stopped.exit_code != 0 and "did not start" in stopped.stderr, stopped.stderr
    deleted = st.cli("standing", "delete", "probe")
    assert deleted.exit_code != 0, deleted.stdout
    assert alive(pid), "a foreign program is never signalled"
    assert st.has_session("loop-standing-probe")
    assert sink.read_text() == ""
    assert len(st.prompts(conversation)) == 1
