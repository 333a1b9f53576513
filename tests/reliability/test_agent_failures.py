"""tmux dying and agents crashing: reported, then respawned (resuming) by the next event."""

from __future__ import annotations

import os
import signal

import pytest

from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.daemon.housekeeping import reconcile_once

pytestmark = pytest.mark.reliability

REF = "github:octo/repo#15"
TARGET = "loop-github-octo-repo-15"


def _start(work: Work) -> str:
    r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "r-1")
    assert "spawned" in r.stdout, r.stdout
    sid = str(work.session_json(REF)["id"])
    work.wait_prompts(sid, 1)
    return sid


def test_tmux_server_killed_sessions_reported_then_resumed(work: Work) -> None:
    sid = _start(work)
    assert work.tmux("kill-server").returncode == 0
    assert work.session_json(REF)["pane"] in ("absent", "unknown")
    found = reconcile_once(open_ctx(work.env.config_path))
    assert found == [sid]
    vanished = work.events("session.vanished")
    assert vanished and vanished[-1]["workItem"] == REF
    lost = work.events("runner.server_lost")  # one event says why they all went
    assert [e["payload"] for e in lost] == [{"socket": work.env.socket, "agents": 1}], lost
    r = work.dispatch("issue_comment", P.issue_comment_event("after the crash"), "r-2")
    assert r.exit_code == 0, r.stdout
    assert "after the crash" in work.wait_prompts(sid, 2)[-1]
    assert fake_agent.read_starts(work.agent_dir, sid)[-1].resumed
    assert work.events("session.respawned")[-1]["payload"]["resumed"] is True


def test_agent_that_crashes_mid_delivery_is_reported_and_respawned(work: Work) -> None:
    work.configure(harness_env={"FAKE_AGENT_CRASH_AFTER": "2"})
    sid = _start(work)
    work.dispatch("issue_comment", P.issue_comment_event("this one kills it"), "r-2")
    work.wait_prompts(sid, 2)
    wait_until(lambda: work.pane_dead(TARGET) == "1", timeout=10, what="the agent to crash")
    assert reconcile_once(open_ctx(work.env.config_path)) == [sid]
    assert work.session_json(REF)["pane"] == "dead"
    assert work.events("runner.server_lost") == []  # the agent went, not the server
    crashed = work.session_json(REF)["attention"]  # told, not hidden: blocked, with why
    assert crashed["state"] == "blocked" and "the harness exited" in crashed["prompt"]["text"]
    r = work.dispatch("issue_comment", P.issue_comment_event("are you back?"), "r-3")
    assert r.exit_code == 0, r.stdout
    texts = work.wait_prompts(sid, 3)
    assert "are you back?" in texts[-1]
    assert work.session_json(REF)["status"] == "active"
    assert work.session_json(REF)["attention"]["state"] != "blocked"


def test_a_staged_prompt_whose_agent_died_is_delivered_once_after_respawn(work: Work) -> None:
    """A crash left a prompt staged; its agent then died, the last pane on the tmux server:
    the respawn ends that server (and the buffer), yet the prompt must still arrive, once."""
    from the_loop.store import sessions as store

    sid = _start(work)
    ctx = open_ctx(work.env.config_path)
    with ctx.db.transaction() as tx:
        seq = store.add_prompt(tx, sid, "left staged by a crash tok-staged", "r-staged")
    assert seq is not None
    tmux = ctx.runners.tmux
    tmux.stage(TARGET, "left staged by a crash tok-staged", f"tl-{sid[:13]}-{seq}")
    with ctx.db.transaction() as tx:
        store.mark_prompt(tx, seq, "staged")
    assert tmux.terminate(TARGET, grace=2).signalled
    wait_until(lambda: work.pane_dead(TARGET) == "1", timeout=10)
    r = work.dispatch("issue_comment", P.issue_comment_event("next one tok-next"), "r-next")
    assert r.exit_code == 0, r.stdout + r.stderr
    texts = work.wait_prompts(sid, 3)
    assert sum("tok-staged" in t for t in texts) == 1
    assert sum("tok-next" in t for t in texts) == 1
    assert texts.index(next(t for t in texts if "tok-staged" in t)) < texts.index(
        next(t for t in texts if "tok-next" in t)
    )


def test_an_agent_lost_again_after_its_restart_is_told_again(daemon: Daemon) -> None:
    """The daemon's reconciler tells each loss, within moments of it: an agent killed,
    started again by the next comment and killed again before the reconciler's next timed
    pass is ``blocked`` again, and the comment after that starts it once more."""
    work = daemon.work
    assert daemon.post("issue_comment", P.issue_comment_event("the-loop start"), "l-0").is_success
    sid = wait_until(lambda: [s["id"] for s in daemon.api("GET", "/sessions").json()], 20)[0]
    work.wait_prompts(sid, 1)

    def watched() -> bool:  # its output piped to the daemon (the screen detector's pass)
        return work.tmux("display", "-p", "-t", f"={TARGET}:", "#{pane_pipe}").stdout == "1\n"

    for n in (1, 2):
        wait_until(watched, what="the pane watched")
        os.killpg(work.pane_pid(TARGET), signal.SIGKILL)
        wait_until(
            lambda: work.session_json(REF)["attention"]["state"] == "blocked",
            10,  # the reconciler's timed pass is a minute away: the pane's death woke it
            what=f"loss {n} told",
        )
        comment = P.issue_comment_event(f"back {n}?")
        assert daemon.post("issue_comment", comment, f"l-{n}").is_success
        assert f"back {n}?" in work.wait_prompts(sid, n + 1, 30)[-1]
    assert len(work.events("session.vanished")) == 2
