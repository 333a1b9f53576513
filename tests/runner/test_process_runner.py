"""The headless runner: completion, transcript, one run at a time per session, timeouts."""

from __future__ import annotations

import itertools
import json
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from the_loop.config import HarnessConfig
from the_loop.errors import BadInput, SpawnFailed
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.runner.base import process_identity
from the_loop.runner.process import ProcessRunner


@pytest.fixture
def proc_runner(tmp_path: Path) -> ProcessRunner:
    return ProcessRunner(work_dir=tmp_path / "work", kill_grace=0.5)


def py(code: str) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code)]


def test_runs_to_completion_and_appends_the_transcript(
    proc_runner: ProcessRunner, tmp_path: Path
) -> None:
    transcript = tmp_path / "t" / "session.jsonl"
    first = proc_runner.run(
        "s1", py("print('one'); import sys; sys.exit(3)"), cwd=tmp_path, transcript=transcript
    )
    second = proc_runner.run(
        "s1",
        py("import os; print(os.environ['LOOP_V'], os.getcwd())"),
        cwd=tmp_path,
        transcript=transcript,
        env={"LOOP_V": "v$1"},
    )
    assert (first.exit_code, first.ok, first.timed_out) == (3, False, False)
    assert second.ok and second.output_offset == first.output_size
    assert first.output() == "one\n"
    assert second.output() == f"v$1 {tmp_path}\n"
    assert transcript.read_text() == f"one\nv$1 {tmp_path}\n"


def test_stderr_tail_is_returned_not_written_to_the_transcript(
    proc_runner: ProcessRunner, tmp_path: Path
) -> None:
    transcript = tmp_path / "session.log"
    result = proc_runner.run(
        "s2",
        py("import sys; sys.stderr.write('E' * 20000 + 'END')"),
        cwd=tmp_path,
        transcript=transcript,
    )
    assert result.stderr_tail.endswith("END") and len(result.stderr_tail) == 8192
    assert transcript.read_text() == ""


def test_runs_of_one_session_never_overlap(proc_runner: ProcessRunner, tmp_path: Path) -> None:
    log = tmp_path / "intervals.jsonl"
    code = f"""
        import json, time
        start = time.monotonic()
        time.sleep(0.15)
        with open({str(log)!r}, "a") as f:
            f.write(json.dumps([start, time.monotonic()]) + "\\n")
    """

    def one() -> None:
        proc_runner.run("same", py(code), cwd=tmp_path, transcript=tmp_path / "t.log")

    threads = [threading.Thread(target=one) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    spans = sorted(json.loads(line) for line in log.read_text().splitlines())
    assert len(spans) == 3
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), spans


def test_timeout_stops_the_whole_process_group(proc_runner: ProcessRunner, tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = f"""
        import subprocess, sys, time
        child = subprocess.Popen(["sleep", "60"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(60)
    """
    result = proc_runner.run(
        "s3", py(code), cwd=tmp_path, transcript=tmp_path / "t.log", timeout=1.0
    )
    assert result.timed_out and result.exit_code == -15
    assert result.output() == "started\n"
    assert process_identity(int(pid_file.read_text())) is None


def test_a_run_ignoring_sigterm_is_killed(proc_runner: ProcessRunner, tmp_path: Path) -> None:
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring", flush=True)
        time.sleep(60)
    """
    result = proc_runner.run(
        "s4", py(code), cwd=tmp_path, transcript=tmp_path / "t.log", timeout=1.0
    )
    assert result.timed_out and result.exit_code == -9


def test_bad_inputs_are_refused(proc_runner: ProcessRunner, tmp_path: Path) -> None:
    transcript = tmp_path / "t.log"
    with pytest.raises(SpawnFailed):
        proc_runner.run("s5", ["/no/such/harness"], cwd=tmp_path, transcript=transcript)
    with pytest.raises(SpawnFailed):
        proc_runner.run("s5", ["true"], cwd=tmp_path / "missing", transcript=transcript)
    with pytest.raises(BadInput):
        proc_runner.run("s5", [], cwd=tmp_path, transcript=transcript)
    with pytest.raises(BadInput):
        proc_runner.run("../escape", ["true"], cwd=tmp_path, transcript=transcript)


def test_a_command_harness_runs_headless_with_a_prompt_file(
    proc_runner: ProcessRunner, tmp_path: Path
) -> None:
    script = tmp_path / "agent.py"
    script.write_text(
        textwrap.dedent("""
        import json, sys
        sid, path = sys.argv[1], sys.argv[2]
        print(json.dumps({"session_id": sid, "prompt": open(path).read()}))
    """)
    )
    config = HarnessConfig(
        adapter="command", headless=[sys.executable, str(script), "{session_id}", "{prompt_file}"]
    )
    adapter = build_adapter("scripted", config)
    assert adapter.wants_prompt_file
    prompt_file = tmp_path / "prompt.txt"
    prompt_file.write_text("do $THIS; `now`")
    launch = adapter.headless(LaunchSpec(tmp_path, "sess-1", "do $THIS; `now`", prompt_file))
    result = proc_runner.run(
        "sess-1", launch.argv, cwd=launch.cwd, env=launch.env, transcript=tmp_path / "sess-1.jsonl"
    )
    assert result.ok
    assert json.loads(result.output()) == {"session_id": "sess-1", "prompt": "do $THIS; `now`"}
