"""``sessions logs REF --follow`` (issue 28): the agent's screen as a stream, like ``tail -f``:
the last lines first, then only the new ones, through the same screen read as ``logs``; it ends
by itself when the session closes and quietly on Ctrl-C. The real CLI in a subprocess, the
offline demo agent in real tmux."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from tests.helpers import wait_until
from tests.work import Work

REF = "local:follow"


def _start(work: Work) -> None:
    started = work.env.run("sessions", "start", REF, "--prompt", "first words", "--harness", "demo")
    assert started.exit_code == 0, started.stdout + started.stderr


def _follow(work: Work, out: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "the_loop", "sessions", "logs", REF, "-f", "-n", "3"],
        stdout=out.open("w"),
        stderr=subprocess.PIPE,
        text=True,
        env=work.env.process_env(),
        cwd=work.env.root,
    )


def test_follow_prints_only_new_lines_and_ends_when_the_session_closes(
    work: Work, tmp_path: Path
) -> None:
    _start(work)
    wait_until(
        lambda: "you asked: first words" in work.env.run("sessions", "logs", REF).stdout,
        30,
        what="the demo agent's answer",
    )
    out = tmp_path / "follow.txt"
    proc = _follow(work, out)
    try:
        wait_until(lambda: out.read_text().count("\n") >= 3, 30, what="the last 3 lines")
        first = out.read_text()
        assert len(first.splitlines()) == 3, first
        said = work.env.run("sessions", "say", REF, "-t", "second words")
        assert said.exit_code == 0, said.stderr
        wait_until(lambda: "you asked: second words" in out.read_text(), 30, what="new lines")
        text = out.read_text()
        assert text.startswith(first)
        assert text.count("you asked: second words") == 1, text
        assert "you asked: first words" not in text[len(first) :], "old lines are not repeated"
        closed = work.env.run("sessions", "close", REF)
        assert closed.exit_code == 0, closed.stderr
        assert proc.wait(timeout=30) == 0
        assert proc.stderr is not None
        assert "closed" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_follow_ends_quietly_on_ctrl_c(work: Work, tmp_path: Path) -> None:
    _start(work)
    out = tmp_path / "follow.txt"
    proc = _follow(work, out)
    try:
        wait_until(lambda: out.read_text().strip(), 30, what="the first lines")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
        assert proc.stderr is not None
        err = proc.stderr.read()
        assert "Traceback" not in err and "aborted" not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        work.env.run("sessions", "close", REF, "--kill-tmux")
