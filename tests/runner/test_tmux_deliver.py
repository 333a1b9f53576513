"""Delivery: byte-exact, ordered, never into a dead pane, nothing escapes the paste."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.fakes import fake_agent
from tests.fakes.prompts import METACHARS, nasty_prompt
from tests.helpers import wait_until
from tests.runner.conftest import FakeAgents
from the_loop.errors import BadInput, NotRunning
from the_loop.runner.tmux import Answer, Probe, TmuxRunner, clean_prompt


def test_big_prompts_arrive_byte_exact_in_order(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-big", "c-big")
    big = nasty_prompt()
    long_line = "x" * 5000 + METACHARS * 200
    assert len(big.encode()) > 20_000 and big.count("\n") == 299
    prompts = ["first", big, long_line, "last 'one'"]
    for prompt in prompts:
        runner.deliver("loop-big", prompt).unwrap()
    assert agents.wait_prompts("c-big", 4) == prompts


def test_deliveries_are_ordered_across_threads_and_processes(
    runner: TmuxRunner, agents: FakeAgents
) -> None:
    agents.spawn("loop-order", "c-order")
    script = textwrap.dedent(f"""
        from pathlib import Path
        from the_loop.runner.tmux import TmuxRunner
        r = TmuxRunner({runner.socket!r}, work_dir=Path({str(runner.work_dir)!r}))
        for i in range(8):
            r.deliver("loop-order", f"proc {{i}}\\n" + "p" * 3000)
    """)
    child = subprocess.Popen([sys.executable, "-c", script])

    def sender(name: str) -> None:
        for i in range(8):
            runner.deliver("loop-order", f"{name} {i}\n" + name[0] * 3000).unwrap()

    threads = [threading.Thread(target=sender, args=(n,)) for n in ("alpha", "beta")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert child.wait(timeout=60) == 0
    received = agents.wait_prompts("c-order", 24)
    for name in ("alpha", "beta", "proc"):
        mine = [p for p in received if p.startswith(name + " ")]
        assert [p.split("\n")[0] for p in mine] == [f"{name} {i}" for i in range(8)]
        body = name[0] * 3000
        assert all(p.split("\n", 1)[1] == body for p in mine), "a prompt was interleaved"


def test_a_dead_pane_is_refused_and_the_server_survives(
    runner: TmuxRunner, agents: FakeAgents, workdir: Path
) -> None:
    agents.spawn("loop-alive", "c-alive")
    runner.spawn("loop-gone", ["sh", "-c", "exit 0"], cwd=workdir).unwrap()
    agents.wait_probe("loop-gone", Probe.DEAD)
    with pytest.raises(NotRunning, match="dead"):
        runner.deliver("loop-gone", "into a dead pane").unwrap()
    assert runner.probe("loop-alive") is Probe.LIVE, "pasting into a dead pane crashes tmux"
    assert _paste_buffers(runner) == []
    runner.deliver("loop-alive", "still fine").unwrap()
    assert agents.wait_prompts("c-alive", 1) == ["still fine"]


def test_control_characters_cannot_escape_the_paste(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-esc", "c-esc")
    runner.deliver("loop-esc", "before\x1b[201~\rinjected\x03 after\r\nend\x00").unwrap()
    runner.deliver("loop-esc", "next").unwrap()
    assert agents.wait_prompts("c-esc", 2) == ["before[201~\ninjected after\nend", "next"]
    assert clean_prompt("a\tb\r\nc\x1b") == "a\tb\nc"


def test_empty_prompt_is_refused(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-empty", "c-empty")
    with pytest.raises(BadInput):
        runner.deliver("loop-empty", " \x1b\r\n").unwrap()


def test_wait_ready_guards_the_first_paste(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-slow", "c-slow", ready=False, FAKE_AGENT_START_DELAY="0.6")
    assert runner.wait_ready("loop-slow", fake_agent.READY, timeout=15)
    runner.deliver("loop-slow", "after ready").unwrap()
    assert agents.wait_prompts("c-slow", 1) == ["after ready"]


def test_wait_ready_gives_up_when_the_pane_dies(runner: TmuxRunner, workdir: Path) -> None:
    runner.spawn("loop-dies", ["sh", "-c", "echo some text; exit 1"], cwd=workdir).unwrap()
    assert not runner.wait_ready("loop-dies", "never shown", timeout=10)


def test_crash_after_prompts_leaves_a_dead_record(runner: TmuxRunner, agents: FakeAgents) -> None:
    agents.spawn("loop-crash", "c-crash", FAKE_AGENT_CRASH_AFTER="2")
    runner.deliver("loop-crash", "one").unwrap()
    runner.deliver("loop-crash", "two").unwrap()
    agents.wait_probe("loop-crash", Probe.DEAD)
    assert agents.prompts("c-crash") == ["one", "two"]
    with pytest.raises(NotRunning):
        runner.deliver("loop-crash", "three").unwrap()
    assert "CRASH" in runner.capture("loop-crash").unwrap().text


def test_resume_appends_to_the_conversation(
    runner: TmuxRunner, agents: FakeAgents, workdir: Path
) -> None:
    agents.spawn("loop-res", "c-res", "initial")
    runner.deliver("loop-res", "second").unwrap()
    agents.wait_prompts("c-res", 2)
    runner.terminate("loop-res", grace=2)
    agents.wait_probe("loop-res", Probe.DEAD)
    argv = fake_agent.command("--resume", "c-res")
    runner.spawn("loop-res", argv, cwd=workdir, env=agents.env()).unwrap()
    assert runner.wait_ready("loop-res", fake_agent.READY, timeout=15)
    runner.deliver("loop-res", "third").unwrap()
    assert agents.wait_prompts("c-res", 3) == ["initial", "second", "third"]
    starts = fake_agent.read_starts(agents.directory, "c-res")
    assert [s.resumed for s in starts] == [False, True]


def test_failing_resume_leaves_a_dead_pane(
    runner: TmuxRunner, agents: FakeAgents, workdir: Path
) -> None:
    argv = fake_agent.command("--resume", "c-nope")
    runner.spawn(
        "loop-nores", argv, cwd=workdir, env=agents.env(FAKE_AGENT_RESUME_FAILS="1")
    ).unwrap()
    agents.wait_probe("loop-nores", Probe.DEAD)
    assert not Path(agents.directory / "c-nope.jsonl").exists()


RECORDER = textwrap.dedent(
    """
    import os, sys, tty
    tty.setraw(0)  # raw, as a TUI reads; it never asks for bracketed paste
    print("READY", flush=True)
    got = b""
    while not got.endswith(b"\\r"):
        got += os.read(0, 4096)
    with open(sys.argv[1] + ".part", "wb") as out:
        out.write(got)
    os.replace(sys.argv[1] + ".part", sys.argv[1])  # whole, or not there
    """
)


@pytest.mark.parametrize("frame", [True, False])
def test_a_framed_paste_carries_its_markers_to_a_program_that_never_asked(
    runner: TmuxRunner, workdir: Path, frame: bool
) -> None:
    """tmux brackets a paste only for a program that asked; a framed one (a harness that reads
    the markers itself) carries them whatever the program asked, with the text cleaned inside
    and the CR that submits it after; an unframed one reaches such a program as typed keys."""
    got = workdir / "got.bin"
    runner.spawn("loop-raw", [sys.executable, "-c", RECORDER, str(got)], cwd=workdir).unwrap()
    runner.wait_ready("loop-raw", "READY", timeout=10)
    runner.deliver("loop-raw", "line one!\nline\x1b[201~ two", frame=frame).unwrap()
    wait_until(got.exists, 10, what="the recorder's bytes")
    body = b"line one!\rline[201~ two"  # tmux sends each LF of a paste as a CR
    assert got.read_bytes() == (b"\x1b[200~" + body + b"\x1b[201~\r" if frame else body + b"\r")


def test_a_staged_paste_whose_deadline_has_passed_pastes_nothing_and_keeps_its_buffers(
    runner: TmuxRunner, agents: FakeAgents, workdir: Path
) -> None:
    """The deadline is read by the tmux server as it runs the paste: a paste that arrives after
    it is not made and its buffers stay (the prompt is still staged, to be pasted or moved);
    one before it is pasted once. A dead pane is told as dead, whatever the clock says."""
    agents.spawn("loop-late", "c-late")
    runner.stage("loop-late", "late tok-late", "the-loop-late").unwrap()
    late = runner.paste_staged("loop-late", "the-loop-late", until=int(time.time()) - 1)
    assert late.answer is Answer.LAPSED, late
    assert runner.has_buffer("the-loop-late").exists
    assert runner.has_buffer("the-loop-late-cr").exists
    on_time = runner.paste_staged("loop-late", "the-loop-late", until=int(time.time()) + 60)
    on_time.unwrap()
    assert agents.wait_prompts("c-late", 1) == ["late tok-late"]
    assert not runner.has_buffer("the-loop-late").exists
    runner.spawn("loop-late-gone", ["sh", "-c", "exit 0"], cwd=workdir).unwrap()
    agents.wait_probe("loop-late-gone", Probe.DEAD)
    runner.stage("loop-late-gone", "never", "the-loop-gone")
    for until in (int(time.time()) - 1, int(time.time()) + 60):
        gone = runner.paste_staged("loop-late-gone", "the-loop-gone", until=until)
        assert gone.answer is Answer.DEAD, gone
    assert agents.prompts("c-late") == ["late tok-late"]


def test_an_agent_started_after_its_deadline_does_not_run_and_a_late_paste_is_not_made(
    runner: TmuxRunner, agents: FakeAgents, workdir: Path
) -> None:
    """A spawn's deadline is read by the agent's launcher as the pane starts: too late, the
    program never runs (the pane dies at once); in time, it runs. A one-off paste
    after its deadline pastes nothing and leaves no buffer."""
    argv = fake_agent.command("--session-id", "c-spawn-late")
    env = agents.env()
    late = runner.spawn("loop-spawn-late", argv, cwd=workdir, env=env, until=int(time.time()) - 1)
    late.unwrap()
    agents.wait_probe("loop-spawn-late", Probe.DEAD)  # (its status: 75, when tmux caught it)
    assert fake_agent.read_records(agents.directory, "c-spawn-late") == []
    argv = fake_agent.command("--session-id", "c-spawn-ok")
    runner.spawn("loop-spawn-ok", argv, cwd=workdir, env=env, until=int(time.time()) + 60).unwrap()
    assert runner.wait_ready("loop-spawn-ok", fake_agent.READY, timeout=15)
    lapsed = runner.deliver("loop-spawn-ok", "too late", until=int(time.time()) - 1)
    assert lapsed.answer is Answer.LAPSED, lapsed
    assert _paste_buffers(runner) == []
    runner.deliver("loop-spawn-ok", "in time", until=int(time.time()) + 60).unwrap()
    assert agents.wait_prompts("c-spawn-ok", 1) == ["in time"]


def _paste_buffers(runner: TmuxRunner) -> list[str]:
    """The tmux buffers left on RUNNER's server but the dead panes' kept screens."""
    names = runner.run("list-buffers", "-F", "#{buffer_name}").stdout.split()
    return [name for name in names if not name.startswith("the-loop-record-")]
