"""Standing sessions through the CLI, with real tmux and the fake agent."""

from __future__ import annotations

import json
import os
import stat
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from tests.standing.conftest import Standing, alive
from the_loop.context import Ctx
from the_loop.errors import LoopError
from the_loop.prompts import render_standing
from the_loop.standing import service as standing


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


TARGET = "loop-standing-probe"


def create_probe(st: Standing, *extra: str) -> str:
    result = st.ok("standing", "create", "probe", "--prompt", "my brief", *extra)
    assert f"probe: started in {TARGET}" in result.stdout, result.stdout
    return st.conversation("probe")


def test_create_starts_the_directive_then_the_brief_and_list_shows_it(st: Standing) -> None:
    conversation = create_probe(st)
    assert st.has_session(TARGET)
    first = st.wait_prompts(conversation, 1)[0]
    assert first == render_standing("probe", "my brief")
    assert first.startswith("You are probe, a standing session of the-loop.")
    assert first.rstrip().endswith("my brief")
    start = st.starts(conversation)[0]
    assert start.argv[:2] == ["--session-id", conversation] and not start.resumed
    assert start.cwd == str(st.env.state_dir / "standing" / "probe")

    row = st.listed()["probe"]
    assert (row["source"], row["status"], row["harness"]) == ("created", "running", "fake")
    assert row["target"] == TARGET and row["startedAt"]
    table = st.ok("standing", "list").stdout
    assert any(line.split()[:3] == ["probe", "created", "running"] for line in table.splitlines())
    assert any(
        line.split()[:3] == ["supervisor", "declared", "absent"] for line in table.splitlines()
    )
    types = [(e["type"], e["standing"]) for e in st.events("standing.*")]
    assert types == [("standing.created", "probe"), ("standing.started", "probe")]
    # its attention names its harness, as a work item's does (the Attention page read "· waiting")
    explained = json.loads(
        st.ok("attention", "explain", "standing:probe", "--format", "json").stdout
    )
    assert (explained["harness"], explained["standing"]) == ("fake", "probe"), explained


def test_say_pastes_the_operator_header_a_blank_line_and_the_text(st: Standing) -> None:
    conversation = create_probe(st)
    said = st.env.run("standing", "say", "probe", "--text", "hi", "--actor", "alice")
    assert said.exit_code == 0, said.stderr
    assert said.stdout == "delivered to probe (2 characters)\n"  # what was typed, not the header
    texts = st.wait_prompts(conversation, 2)
    assert texts[1] == "Message from alice to standing session `probe`:\n\nhi"

    blank = st.cli("standing", "say", "probe", "--text", "  \n ")
    assert blank.exit_code == 2 and "empty message" in blank.stderr
    assert len(st.prompts(conversation)) == 2
    assert st.listed()["probe"]["lastMessageAt"]
    said_events = st.events("standing.said")
    assert [(e["standing"], e["payload"]["actor"]) for e in said_events] == [("probe", "alice")]


def test_stop_keeps_the_conversation_and_start_resumes_it(st: Standing) -> None:
    conversation = create_probe(st)
    pid = st.first_start(conversation).pid
    assert alive(pid)

    assert "probe: stopped" in st.ok("standing", "stop", "probe").stdout
    assert not alive(pid), "the harness is terminated"
    stopped = st.events("standing.stopped")[-1]
    assert stopped["standing"] == "probe" and stopped["payload"]["signalled"] == [pid]
    assert not st.has_session(TARGET), "the tmux session is gone"
    row = st.listed()["probe"]
    assert (row["status"], row["conversationId"]) == ("stopped", conversation)

    refused = st.cli("standing", "say", "probe", "--text", "anyone?")
    assert refused.exit_code == 1
    assert "`the-loop standing start probe`" in refused.stderr
    assert len(st.starts(conversation)) == 1, "say never spawns"

    assert f"probe: resumed in {TARGET}" in st.ok("standing", "start", "probe").stdout
    resumed = st.wait_starts(conversation, 2)[-1]
    assert resumed.resumed and resumed.argv[:2] == ["--resume", conversation]
    again = st.ok("standing", "start", "probe").stdout
    assert "probe: already-running" in again and len(st.starts(conversation)) == 2

    assert "probe: resumed" in st.ok("standing", "restart", "probe").stdout
    starts = st.wait_starts(conversation, 3)
    assert len(starts) == 3 and starts[-1].resumed and not alive(starts[1].pid)
    assert st.listed()["probe"]["conversationId"] == conversation
    st.ok("standing", "say", "probe", "--text", "still you?", "--actor", "bob")
    assert st.wait_prompts(conversation, 2)[-1].endswith("\n\nstill you?")


def test_a_resume_that_dies_starts_a_fresh_conversation(st: Standing) -> None:
    st.configure(harness_env={"FAKE_AGENT_RESUME_FAILS": "1"})
    conversation = create_probe(st)
    st.ok("standing", "stop", "probe")
    result = st.ok("standing", "start", "probe").stdout
    assert "probe: started" in result
    fresh = st.conversation("probe")
    assert fresh != conversation
    assert st.wait_prompts(fresh, 1)[0].rstrip().endswith("my brief")
    kinds = [e["type"] for e in st.events("standing.*")]
    assert kinds[-2:] == ["standing.resume_failed", "standing.started"]


def test_refusals_of_names_and_of_declared_sessions(st: Standing) -> None:
    declared = st.cli("standing", "create", "supervisor")
    assert declared.exit_code == 2 and "standing.sessions[0]" in declared.stderr
    kept = st.cli("standing", "delete", "supervisor")
    assert kept.exit_code == 2
    assert (
        "standing.sessions[0]" in kept.stderr and "the-loop standing stop supervisor" in kept.stderr
    )
    assert st.cli("standing", "delete", "nobody").exit_code == 1
    assert st.cli("standing", "start", "nobody").exit_code == 1
    bad = st.cli("standing", "create", "Bad_Name")
    assert bad.exit_code == 2 and "invalid standing session name" in bad.stderr

    st.ok("standing", "create", "probe", "--no-start", "--description", "on call")
    twice = st.cli("standing", "create", "probe", "--no-start")
    assert twice.exit_code == 2 and "already exists" in twice.stderr
    row = st.listed()["probe"]
    assert (row["status"], row["description"]) == ("absent", "on call")
    assert not st.has_session(TARGET), "--no-start starts nothing"
    assert "deleted probe" in st.ok("standing", "delete", "probe").stdout
    assert "probe" not in st.listed()
    assert [e["standing"] for e in st.events("standing.deleted")] == ["probe"]


def test_delete_stops_a_running_created_session_first(st: Standing) -> None:
    conversation = create_probe(st)
    pid = st.first_start(conversation).pid
    st.ok("standing", "delete", "probe")
    assert not alive(pid) and not st.has_session(TARGET)
    assert "probe" not in st.listed()


def test_declared_session_inherits_and_an_unusable_block_is_refused_except_by_stop(
    st: Standing,
) -> None:
    brief = st.env.root / "briefs" / "supervisor.md"
    brief.parent.mkdir()
    brief.write_text("keep an eye on CI\n")
    st.configure(declared=[{"name": "supervisor", "promptFile": "briefs/supervisor.md"}])
    assert "supervisor: started" in st.ok("standing", "start", "supervisor").stdout
    conversation = st.conversation("supervisor")
    assert st.wait_prompts(conversation, 1)[0].rstrip().endswith("keep an eye on CI")
    assert st.listed()["supervisor"]["source"] == "declared"

    brief.unlink()
    for verb in (["start", "supervisor"], ["restart", "supervisor"]):
        refused = st.cli("standing", *verb)
        assert refused.exit_code == 2, refused.stderr
        assert "standing.sessions[0].promptFile: cannot read" in refused.stderr
    said = st.cli("standing", "say", "supervisor", "--text", "hi")
    assert said.exit_code == 2 and "promptFile" in said.stderr
    pid = st.starts(conversation)[0].pid
    assert alive(pid), "refusals touch nothing"
    assert "supervisor: stopped" in st.ok("standing", "stop", "supervisor").stdout
    assert not alive(pid) and not st.has_session("loop-standing-supervisor")
    assert st.listed()["supervisor"]["problems"]


def test_unsupported_harness_is_refused(st: Standing) -> None:
    st.configure(declared=[{"name": "supervisor", "harness": "cursor"}])
    refused = st.cli("standing", "start", "supervisor")
    assert refused.exit_code == 2 and "process runner" in refused.stderr
    created = st.cli("standing", "create", "probe", "--harness", "cursor")
    assert created.exit_code == 2 and "probe" not in st.listed()
    unknown = st.cli("standing", "create", "probe", "--harness", "nope")
    assert unknown.exit_code == 2 and "not a known harness" in unknown.stderr
    assert unknown.stderr.startswith("error: cannot create standing session probe\n")
    assert "still works" not in unknown.stderr  # nothing was stored: there is nothing to stop


def test_a_working_directory_that_cannot_be_one_is_refused_by_create(st: Standing) -> None:
    """A --cwd that is no directory, or whose name is too long for the system, is refused
    with the reason (a long one was "internal error: OSError(36, …)"); nothing is stored."""
    missing = st.cli("standing", "create", "probe", "--no-start", "--cwd", "/nonexistent/dir")
    assert missing.exit_code == 2, missing.stderr
    assert "cwd: /nonexistent/dir is not a directory" in missing.stderr
    long = st.cli("standing", "create", "probe", "--no-start", "--cwd", "x" * 5000)
    assert long.exit_code == 2 and "internal error" not in long.stderr, long.stderr
    assert "cannot be used: File name too long" in long.stderr
    for empty in ("", " "):  # an unset variable: not the current directory
        refused = st.cli("standing", "create", "probe", "--no-start", "--cwd", empty)
        assert refused.exit_code == 2, refused.stdout + refused.stderr
        assert (
            refused.stderr
            == "error: --cwd is empty: name a directory, or leave it out for the default\n"
        )
    assert "probe" not in st.listed()


def test_a_live_tmux_session_without_a_record_is_never_adopted(st: Standing) -> None:
    st.configure(declared=[{"name": "ghost"}])
    ghosts = {}
    for name in ("ghost", "shade"):
        target = f"loop-standing-{name}"
        made = st.tmux("new-session", "-d", "-s", target, "-P", "-F", "#{pane_pid}", "sleep 300")
        assert made.returncode == 0, made.stderr
        ghosts[name] = int(made.stdout.strip())
    st.ok("standing", "create", "shade", "--no-start")

    for name in ghosts:
        for verb in ("start", "restart", "stop"):
            refused = st.cli("standing", verb, name)
            assert refused.exit_code == 2, (verb, name, refused.stdout, refused.stderr)
            assert "the-loop did not start" in refused.stderr
        said = st.cli("standing", "say", name, "--text", "boo")
        assert said.exit_code == 2
    assert all(alive(pid) for pid in ghosts.values()), "nothing was signalled"
    assert st.has_session("loop-standing-ghost") and st.has_session("loop-standing-shade")
    listed = st.listed()
    assert listed["ghost"]["status"] == "absent" and "did not start" in listed["ghost"]["note"]
    assert listed["shade"]["conversationId"] is None
    assert not list(st.agent_dir.iterdir()), "no agent was spawned"


def _crashing_tmux(root: Path) -> str:
    bin_dir = root / "fakebin"
    bin_dir.mkdir()
    script = bin_dir / "tmux"
    script.write_text("#!/bin/sh\nkill -SEGV $$\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return f"{bin_dir}:{os.environ['PATH']}"


def test_tmux_not_answering_spawns_nothing(st: Standing, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        patch.setenv("PATH", _crashing_tmux(st.env.root))
        created = st.cli("standing", "create", "probe", "--prompt", "my brief")
        assert created.exit_code == 1 and "tmux did not answer" in created.stderr
        started = st.cli("standing", "start", "supervisor")
        assert started.exit_code == 1 and "nothing spawned" in started.stderr
        listed = st.listed()
        assert "probe" not in listed and "did not answer" in listed["supervisor"]["note"]

    assert not list(st.agent_dir.iterdir()), "no agent was spawned"
    assert st.sessions() == [], "no tmux session exists"
    assert [e["standing"] for e in st.events("standing.create_failed")] == ["probe"]
    assert "probe" not in st.listed()


def test_a_create_whose_start_fails_leaves_no_record(st: Standing) -> None:
    broken = {"adapter": "command", "interactive": [str(st.env.root / "no-such-agent"), "{prompt}"]}
    st.configure(harnesses={"broken": broken})
    failed = st.cli("standing", "create", "probe", "--harness", "broken")
    assert failed.exit_code == 1 and "not found" in failed.stderr
    assert "probe" not in st.listed()
    assert [e["type"] for e in st.events("standing.*")] == [
        "standing.created",
        "standing.spawn_failed",
        "standing.create_failed",
    ]
    create_probe(st)


def test_start_and_stop_without_a_name_and_the_daemon_hooks(st: Standing) -> None:
    st.configure(declared=[{"name": "supervisor"}, {"name": "idle", "autoStart": False}])
    st.ok("standing", "create", "probe", "--no-start")
    st.ok("standing", "create", "quiet", "--no-start", "--no-auto-start")
    ctx = st.ctx()
    assert standing.autostart(ctx) == [] and standing.health_problems(ctx) == []

    st.configure(
        declared=[{"name": "supervisor"}, {"name": "idle", "autoStart": False}], enabled=True
    )
    ctx = st.ctx()
    problems = standing.health_problems(ctx)
    assert [p.split()[2] for p in problems] == ["supervisor", "probe"]
    outcomes = standing.autostart(ctx)
    assert [(o.name, o.outcome.value) for o in outcomes] == [
        ("supervisor", "started"),
        ("probe", "started"),
    ]
    assert standing.health_problems(ctx) == []
    assert not st.has_session("loop-standing-idle") and not st.has_session("loop-standing-quiet")

    everything = st.ok("standing", "start", "--format", "json").stdout
    outcomes_json = {o["name"]: o["outcome"] for o in json.loads(everything)}
    assert outcomes_json == {
        "supervisor": "already-running",
        "idle": "started",
        "probe": "already-running",
        "quiet": "started",
    }
    stopped = standing.stop_all(ctx)
    assert sorted(o.name for o in stopped if o.outcome.value == "stopped") == [
        "idle",
        "probe",
        "quiet",
        "supervisor",
    ]
    assert st.sessions() == []
    assert len(standing.health_problems(ctx)) == 2
    assert "probe: already-stopped" in st.ok("standing", "stop").stdout


def test_concurrent_starts_of_one_name_spawn_one_agent(st: Standing) -> None:
    contexts = [st.ctx() for _ in range(4)]
    barrier = threading.Barrier(len(contexts))

    def start(ctx: Ctx) -> str:
        barrier.wait(timeout=10)
        try:
            return standing.start(ctx, "supervisor")[0].outcome.value
        except LoopError as exc:
            return f"error: {exc.message}"

    with ThreadPoolExecutor(len(contexts)) as pool:
        kinds = sorted(pool.map(start, contexts))
    assert kinds == ["already-running"] * 3 + ["started"], kinds
    conversation = st.conversation("supervisor")
    st.first_start(conversation)
    assert len(st.starts(conversation)) == 1
    assert [p.name for p in st.agent_dir.iterdir()] == [f"{conversation}.jsonl"]
