"""Work-item sessions end to end through `the-loop dispatch` and the CLI, with real tmux and
the fake agent."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import BACKENDS
from tests.fakes import payloads as P
from tests.helpers import run_in_terminal, wait_until
from tests.work import Work


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


TARGET = "loop-github-octo-repo-15"
REF = "github:octo/repo#15"


def start(work: Work, body: str = "the-loop do fix it", delivery: str = "d-start") -> str:
    result = work.dispatch("issue_comment", P.issue_comment_event(body), delivery)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "spawned" in result.stdout, result.stdout
    return str(work.session_json(REF)["id"])


def test_authorized_do_spawns_then_comments_reach_the_same_pane(work: Work) -> None:
    sid = start(work)
    first = work.wait_prompts(sid, 1)[0]
    assert "fix it" in first and "Flaky test in the scheduler" in first
    assert "https://github.com/octo/repo/issues/15" in first
    assert work.tmux("has-session", "-t", f"={TARGET}").returncode == 0

    r = work.dispatch("issue_comment", P.issue_comment_event("please also add a test"), "d-2")
    assert r.exit_code == 0 and "delivered 1" in r.stdout
    assert "please also add a test" in work.wait_prompts(sid, 2)[1]

    stranger = P.issue_comment_event("the-loop do rm -rf", sender="mallory")
    assert "unauthorized" in work.dispatch("issue_comment", stranger, "d-3").stdout
    marked = P.issue_comment_event("done <!-- the-loop -->")
    assert "self-marker" in work.dispatch("issue_comment", marked, "d-4").stdout
    again = work.dispatch("issue_comment", P.issue_comment_event("please also add a test"), "d-2")
    assert again.exit_code == 0 and "duplicate" in again.stdout
    assert len(work.prompts(sid)) == 2
    listed = work.cli("sessions", "list")
    assert REF in listed.stdout and "active" in listed.stdout and TARGET in listed.stdout


def test_close_terminates_keeps_pane_and_reopen_starts_fresh(work: Work) -> None:
    sid = start(work)
    work.wait_prompts(sid, 1)
    # the fake agent logs a prompt, then prints it: the record below is of a screen that shows it
    wait_until(
        lambda: "FAKE-AGENT GOT #1" in work.tmux("capture-pane", "-p", "-t", f"={TARGET}:").stdout,
        10,
        what="the prompt on the agent's screen",
    )
    closed = work.dispatch(
        "issues", P.issues_event("closed", sender="someone-else", state="closed"), "d-close"
    )
    assert closed.exit_code == 0 and "issue-closed" in closed.stdout
    wait_until(lambda: work.pane_dead(TARGET) == "1", timeout=10, what="dead pane")
    shown = work.session_json(REF)
    assert shown["status"] == "closed" and shown["closeReason"] == "issue-closed"
    assert work.events("session.harness_terminated")
    code, shown = run_in_terminal(  # attach needs a terminal
        [sys.executable, "-m", "the_loop", "sessions", "attach", REF],
        env={**work.env.process_env(), "PATH": _fake_tmux_path(work)},
    )
    assert code == 0, shown  # (tmux not answering about the pane: attached read-only)
    assert "closed; attaching read-only" in shown
    assert "attach-session -r -f ignore-size -t =loop-github-octo-repo-15" in shown
    # with tmux: the agent has exited, so its last screen is printed (no client attaches to a
    # dead pane, decision 0087)
    code, shown = run_in_terminal(
        [sys.executable, "-m", "the_loop", "sessions", "attach", REF], env=work.env.process_env()
    )
    assert code == 0, shown
    assert "has exited; its last screen" in shown and "FAKE-AGENT GOT #1" in shown, shown
    assert work.tmux("list-clients").stdout == "" and work.pane_dead(TARGET) == "1"

    work.dispatch("issues", P.issues_event("reopened"), "d-reopen")
    work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "d-restart")
    fresh = work.session_json(REF)
    assert fresh["status"] == "active" and fresh["id"] != sid
    work.wait_prompts(fresh["id"], 1)


def _fake_tmux_path(work: Work) -> str:
    """A PATH whose `tmux` prints its argv instead of attaching (exec replaces the CLI)."""
    bin_dir = work.env.root / "fakebin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "tmux"
    script.write_text('#!/bin/sh\necho "tmux $*"\n')
    script.chmod(0o755)
    return f"{bin_dir}:{os.environ['PATH']}"


def test_pr_fixing_an_issue_reaches_its_session_and_merge_keeps_it_open(work: Work) -> None:
    sid = start(work)
    pr_comment = P.issue_comment_event("CI looks red here", number=20, on_pr=True)
    r = work.dispatch("issue_comment", pr_comment, "d-pr-1")
    assert "delivered" in r.stdout, r.stdout
    assert "CI looks red here" in work.wait_prompts(sid, 2)[1]
    merged = P.pull_request_event("closed", state="closed", merged=True)
    work.dispatch("pull_request", merged, "d-merge")
    assert work.session_json(REF)["status"] == "active"
    kept = work.events("session.kept_open")
    assert kept and kept[-1]["workItem"] == REF


def test_pause_drops_resume_delivers_without_replay_stop_closes(work: Work) -> None:
    sid = start(work)
    work.wait_prompts(sid, 1)
    work.dispatch("issue_comment", P.issue_comment_event("the-loop pause"), "d-p")
    assert work.session_json(REF)["status"] == "paused"
    work.dispatch("issue_comment", P.issue_comment_event("dropped while paused"), "d-x")
    work.dispatch("issue_comment", P.issue_comment_event("the-loop resume"), "d-r")
    work.dispatch("issue_comment", P.issue_comment_event("after resume"), "d-y")
    texts = work.wait_prompts(sid, 2)
    assert "after resume" in texts[-1]
    assert not any("dropped while paused" in t for t in texts)
    work.dispatch("issue_comment", P.issue_comment_event("the-loop stop"), "d-s")
    shown = work.session_json(REF)
    assert shown["status"] == "closed" and shown["closeReason"] == "stopped"


def test_killed_tmux_session_respawns_with_resume_and_same_id(work: Work) -> None:
    sid = start(work)
    work.wait_prompts(sid, 1)
    assert work.tmux("kill-session", "-t", f"={TARGET}").returncode == 0
    work.dispatch("issue_comment", P.issue_comment_event("are you there?"), "d-after-kill")
    texts = work.wait_prompts(sid, 2)
    assert "are you there?" in texts[-1]
    starts = [
        s
        for s in __import__("tests.fakes.fake_agent", fromlist=["x"]).read_starts(
            work.agent_dir, sid
        )
    ]
    assert starts[-1].resumed is True
    respawned = work.events("session.respawned")
    assert respawned[-1]["payload"]["resumed"] is True
    assert work.session_json(REF)["id"] == sid


def test_harness_that_cannot_resume_starts_fresh(work: Work) -> None:
    work.configure(harness_env={"FAKE_AGENT_RESUME_FAILS": "1"})
    sid = start(work)
    work.wait_prompts(sid, 1)
    work.tmux("kill-session", "-t", f"={TARGET}")
    work.dispatch("issue_comment", P.issue_comment_event("still there?"), "d-fresh")
    types = [e["type"] for e in work.events("session.re*")]
    assert types[-2:] == ["session.resume_failed", "session.respawned"]
    assert work.events("session.respawned")[-1]["payload"]["resumed"] is False
    new_id = work.session_json(REF)["harnessSessionId"]
    assert new_id != sid
    texts = work.wait_prompts(new_id, 2)
    assert "could not be resumed" in texts[0] and "still there?" in texts[1]


def test_max_concurrent_sessions_queues_fifo(work: Work) -> None:
    work.configure(routing={"maxConcurrentSessions": 2})
    for n in (1, 2, 3):
        body = P.issue_comment_event("the-loop start", number=n)
        work.dispatch("issue_comment", body, f"d-q{n}")
    queued = work.session_json("github:octo/repo#3")
    assert queued["status"] == "queued"
    assert work.events("dispatch.queued")
    # nothing runs yet, and every surface says why rather than calling it working
    assert queued["attention"] is None
    assert "all 2 session slots are taken" in queued["queuedBecause"]
    explained = work.cli("attention", "explain", "github:octo/repo#3")
    assert explained.exit_code == 1 and "is queued: its agent has not started" in explained.stderr
    by_hand = work.cli("sessions", "start", "local:later", "--prompt", "when there is room")
    assert by_hand.exit_code == 0, by_hand.stderr
    assert (
        "queued local:later" in by_hand.stdout and "why:    all 2 session slots" in by_hand.stdout
    )
    work.dispatch("issue_comment", P.issue_comment_event("hello queued", number=3), "d-q3b")
    work.cli("sessions", "close", "github:octo/repo#1")
    third = work.session_json("github:octo/repo#3")
    assert third["status"] == "active"
    assert third["attention"] is not None and third["queuedBecause"] is None
    texts = work.wait_prompts(third["id"], 2)
    assert "hello queued" in texts[1]


def test_operator_verbs(work: Work) -> None:
    sid = start(work)
    work.wait_prompts(sid, 1)
    said = work.cli("sessions", "say", REF, "--text", "from the operator", "--actor", "ops")
    assert said.exit_code == 0
    assert "from the operator" in work.wait_prompts(sid, 2)[1]
    assert work.cli("sessions", "say", REF, "--text", "  ").exit_code == 2
    wait_until(lambda: "FAKE-AGENT GOT" in work.cli("sessions", "logs", REF).stdout)
    assert work.cli("sessions", "pause", REF).exit_code == 0
    assert work.cli("sessions", "resume", REF).exit_code == 0
    assert work.cli("sessions", "show", "github:octo/repo#99").exit_code == 1
    assert work.cli("sessions", "show", "not-a-ref#").exit_code == 2
    assert work.cli("sessions", "close", REF, "--kill-tmux").exit_code == 0
    wait_until(lambda: work.tmux("has-session", "-t", f"={TARGET}").returncode != 0)
    assert work.cli("sessions", "close", REF).exit_code == 2


def test_dispatch_bad_input_exits_2(work: Work) -> None:
    bad = work.env.root / "bad.json"
    bad.write_text("{not json")
    result = work.cli("dispatch", "--event", "issues", str(bad))
    assert result.exit_code == 2 and "not valid JSON" in result.stderr
    missing = work.cli("dispatch", "--event", "issues", str(work.env.root / "none.json"))
    assert missing.exit_code == 2
    ignored = work.dispatch("push", {"ref": "refs/heads/main"}, "d-push")
    assert ignored.exit_code == 0 and "ignored" in ignored.stdout


def test_concurrent_dispatches_from_two_processes_make_one_session(work: Work) -> None:
    code = (
        "import json, sys\n"
        "from the_loop.context import open_ctx\n"
        "from the_loop.intake.dispatch import dispatch\n"
        "from tests.fakes import payloads as P\n"
        "ctx = open_ctx()\n"
        "tag = sys.argv[1]\n"
        "for i in range(20):\n"
        "    body = P.issue_comment_event(f'the-loop start tok-{tag}-{i}-end')\n"
        "    dispatch(ctx, 'issue_comment', json.dumps(body).encode(), f'{tag}-{i}')\n"
    )
    env = work.env.process_env()
    env["PYTHONPATH"] = str(work.env.root.parent) + os.pathsep + os.getcwd()
    procs = [
        subprocess.Popen([sys.executable, "-c", code, tag], env=env, cwd=os.getcwd())
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    sessions = [
        s for s in __import__("json").loads(work.cli("sessions", "list", "--format", "json").stdout)
    ]
    assert len(sessions) == 1
    sid = sessions[0]["id"]
    texts = work.wait_prompts(sid, 40)
    assert len(texts) == 40
    seen = [m for text in texts for m in re.findall(r"tok-([ab]-[0-9]+)-end", text)]
    assert sorted(seen) == sorted(f"{t}-{i}" for t in "ab" for i in range(20))
    for tag in "ab":
        mine = [s for s in seen if s.startswith(tag)]
        assert mine == [f"{tag}-{i}" for i in range(20)]


def test_the_loops_own_secrets_never_reach_an_agent(work: Work) -> None:
    import subprocess as sp
    import sys as system

    from tests.fakes import fake_agent

    env = work.env.process_env()
    env.update(
        THE_LOOP_TOKEN="api-secret-1",
        THE_LOOP_WEBHOOK_SECRET="hook-secret-2",
        SLACK_BOT_TOKEN="slack-secret-3",
        KEEP_ME="visible-4",
    )
    payload = work.env.root / "start.json"
    payload.write_text(__import__("json").dumps(P.issue_comment_event("the-loop start")))
    done = sp.run(
        [system.executable, "-m", "the_loop", "dispatch", "--event", "issue_comment", str(payload)],
        env=env,
        capture_output=True,
        text=True,
        cwd=work.env.root,
    )
    assert done.returncode == 0, done.stderr
    sid = work.session_json(REF)["id"]
    work.wait_prompts(sid, 1)
    shown = work.tmux("show-environment", "-g").stdout
    assert "KEEP_ME=visible-4" in shown
    for secret in ("api-secret-1", "hook-secret-2", "slack-secret-3"):
        assert secret not in shown
    start = fake_agent.read_starts(work.agent_dir, sid)[0]
    assert not {"THE_LOOP_TOKEN", "THE_LOOP_WEBHOOK_SECRET", "SLACK_BOT_TOKEN"} & set(start.env)


def test_workspace_through_dispatch_and_remove_on_close(work: Work) -> None:
    from tests.sessions.test_workspace import current_branch, make_repo

    clone = make_repo(work.env.root / "clone")
    work.configure(
        workspaces={
            "enabled": True,
            "repos": {"octo/repo": str(clone)},
            "setup": "echo ran >> setup.log",
            "removeOnClose": True,
        }
    )
    sid = start(work)
    work.wait_prompts(sid, 1)
    cwd = work.session_json(REF)["cwd"]
    assert cwd.endswith("workspaces/github-octo-repo-15")
    assert current_branch(__import__("pathlib").Path(cwd)) == "the-loop/github-octo-repo-15"
    assert (__import__("pathlib").Path(cwd) / "setup.log").read_text() == "ran\n"
    assert work.events("workspace.prepared")
    work.dispatch("issues", P.issues_event("closed", state="closed"), "d-close")
    assert not __import__("pathlib").Path(cwd).exists()
    assert work.events("workspace.removed")


def test_inbox_list_and_replay_from_the_cli(work: Work) -> None:
    import json as js

    work.env.write_config(
        routing={"defaultHarness": "claude", "authorizedUsers": ["alice"]},
        harnesses={"claude": {"binary": "/nonexistent/claude"}},
    )
    failed = work.dispatch("issue_comment", P.issue_comment_event("the-loop start"), "d-fail")
    assert failed.exit_code == 1 and "not found" in failed.stdout
    dead = js.loads(work.cli("inbox", "list", "--status", "dead", "--format", "json").stdout)
    assert [d["deliveryId"] for d in dead] == ["d-fail"]
    assert work.cli("inbox", "replay", "nope").exit_code == 1
    work.configure()
    replayed = work.cli("inbox", "replay", "d-fail")
    assert replayed.exit_code == 0 and "succeeded" in replayed.stdout, replayed.stdout
    assert work.session_json(REF)["status"] == "active"
    assert work.cli("inbox", "list", "--status", "bogus").exit_code == 2
