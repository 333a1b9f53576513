"""`standing attach` and `standing logs` through the installed CLI, and `the-loop stop` saying
what it stopped when no daemon runs (issue 13, items 4 and 5)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.helpers import wait_until
from tests.standing.conftest import Standing

CLI = str(Path(sys.executable).with_name("the-loop"))
TARGET = "loop-standing-probe"


def _create_probe(st: Standing) -> str:
    st.ok("standing", "create", "probe", "--prompt", "my brief")
    return st.conversation("probe")


def test_logs_prints_the_screen_of_a_running_standing_session(st: Standing) -> None:
    conversation = _create_probe(st)
    st.wait_prompts(conversation, 1)

    def screen() -> str:
        return st.env.run("standing", "logs", "probe", "-n", "50").stdout

    wait_until(lambda: "FAKE-AGENT GOT" in screen(), timeout=15, what="the agent's screen")
    logs = st.env.run("standing", "logs", "probe", "-n", "50")
    assert logs.exit_code == 0 and "FAKE-AGENT READY" in logs.stdout
    st.ok("standing", "stop", "probe")
    stopped = st.env.run("standing", "logs", "probe")
    assert stopped.exit_code == 1
    assert stopped.stderr == (
        "error: standing session probe is not running; start it with "
        "`the-loop standing start probe`\n"
    )
    unknown = st.env.run("standing", "logs", "nobody")
    assert unknown.exit_code == 1 and "no standing session 'nobody'" in unknown.stderr
    assert st.env.run("standing", "logs", "Bad Name").exit_code == 2


def test_attach_says_how_to_detach_then_attaches(st: Standing) -> None:
    _create_probe(st)
    env = st.env.process_env()
    env["TERM"] = "xterm"
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [CLI, "standing", "attach", "probe", "--read-only"],
        stdin=secondary,
        stdout=secondary,
        # the hint goes to stderr: a pipe here, because tmux flushes the terminal's unread
        # output when it takes it over (a person's terminal has shown it by then)
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,
    )
    os.close(secondary)
    shown = bytearray()

    def clients() -> list[str]:
        return st.tmux(
            "list-clients", "-t", f"={TARGET}", "-F", "#{client_readonly}"
        ).stdout.split()

    try:
        deadline = time.monotonic() + 20
        while not clients() and time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.1)
            if ready:
                shown += os.read(primary, 65536)
        assert clients() == ["1"], "no read-only tmux client attached"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
        os.close(primary)
    hint = b"attaching read-only (what you type is not sent); detach with C-b d"
    assert hint in err, err
    wait_until(lambda: not clients(), timeout=10, what="the tmux client gone")


def test_attach_to_a_stopped_standing_session_is_refused_in_one_line(st: Standing) -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.run(
        [CLI, "standing", "attach", "supervisor"],
        stdin=secondary,
        stdout=secondary,
        stderr=subprocess.PIPE,
        env=st.env.process_env(),
        text=True,
        timeout=60,
        check=False,
    )
    os.close(secondary)
    os.close(primary)
    assert proc.returncode == 1
    assert proc.stderr == (
        "error: standing session supervisor is not running; start it with "
        "`the-loop standing start supervisor`\n"
    )


def test_stop_without_a_daemon_stops_the_standing_sessions_and_says_so(st: Standing) -> None:
    _create_probe(st)
    result = st.env.run("stop")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "standing probe: stopped\nthe-loop daemon is not running\n"
    assert not st.has_session(TARGET)
    again = st.env.run("stop")
    assert again.exit_code == 0 and again.stdout == "the-loop daemon is not running\n"
