"""`sessions attach` with real tmux and the daemon, the way a person uses it: attached in a
terminal while the agent exits on its own (decision 0088)."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time

from tests.daemon import Daemon, served
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

REF = "github:octo/repo#15"
TARGET = "loop-github-octo-repo-15"


def test_an_agent_that_exits_while_attached_leaves_its_last_screen_on_the_terminal(
    work: Work,
) -> None:
    """A person attached (focused, writable) to an agent that asked for focus events, as
    Claude Code does; the agent exits on its own. The person is detached at once and shown
    the screen the agent left, the command exits 0, and the tmux server runs on: the person
    leaving the dead pane cannot make tmux 3.3a exit (decision 0087)."""
    work.configure(github={"enabled": True}, harness_env={"FAKE_AGENT_FOCUS": "1"})
    with served(work) as d:
        _attached_when_the_agent_exits(d)


def _attached_when_the_agent_exits(d: Daemon) -> None:
    work = d.work
    for number in (15, 16):
        said = P.issue_comment_event("the-loop do it", number=number)
        assert d.post("issue_comment", said, f"d-{number}").status_code == 202
    wait_until(lambda: len(d.api("GET", "/sessions").json()) == 2, 30, what="two sessions")
    work.wait_prompts(str(work.session_json(REF)["id"]), 1, timeout=30)

    primary, secondary = pty.openpty()
    person = subprocess.Popen(
        [sys.executable, "-m", "the_loop", "sessions", "attach", REF],
        stdin=secondary, stdout=secondary, stderr=subprocess.PIPE,
        env={**work.env.process_env(), "TERM": "xterm-256color"}, start_new_session=True,
    )  # fmt: skip
    os.close(secondary)
    shown = bytearray()

    def read() -> None:
        while select.select([primary], [], [], 0)[0]:
            try:
                shown.extend(os.read(primary, 65536))
            except OSError:  # the terminal closed
                return

    def focused() -> bool:
        read()
        flags = work.tmux("list-clients", "-t", f"={TARGET}", "-F", "#{client_flags}").stdout
        return "focused" in flags.split(",")

    try:
        wait_until(focused, 20, what="the person's client attached and focused")
        pane = work.tmux("display-message", "-p", "-t", f"={TARGET}:", "#{pane_pid}")
        os.kill(int(pane.stdout), signal.SIGKILL)  # the agent exits on its own
        deadline = time.monotonic() + 20
        while person.poll() is None and time.monotonic() < deadline:
            read()
        assert person.poll() == 0, ("attach did not end with the agent", bytes(shown)[-300:])
        read()
    finally:
        if person.poll() is None:
            os.killpg(person.pid, signal.SIGKILL)
        err = person.communicate(timeout=10)[1].decode()
        os.close(primary)
    assert "note: the agent has exited; its last screen, kept as a record:" in err, err
    printed = shown.decode("utf-8", "replace")
    tail = printed[printed.rindex("[detached") :]
    assert "Pane is dead (signal 9" in tail, tail
    assert work.pane_dead("loop-github-octo-repo-16") == "0", "the tmux server exited"
    assert work.tmux("list-clients").stdout == ""
