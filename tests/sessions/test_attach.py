"""`sessions attach` with real tmux, the way a person uses it: attached in a terminal while
the agent exits on its own, with the daemon and without it (decision 0088)."""

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
from tests.runner.conftest import FakeAgents
from tests.work import Work
from the_loop.agent import panes
from the_loop.config import load_config
from the_loop.context import open_ctx

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


def test_with_no_daemon_an_attached_agents_end_is_seen(work: Work) -> None:
    """tmux 3.3a misses about one agent's end in seven (libutempter's SIGCHLD window), and
    then the pane's death hook, which detaches a watching client, waits. Attach looks after
    the agent it shows itself (``panes.seen_ending``): each of many agents killed in turn, with
    nothing else of the-loop looking at it, is seen ended by tmux and its hook run."""
    work.configure()
    ctx = open_ctx(loaded=load_config(work.env.config_path))
    agents = FakeAgents(ctx.runners.tmux, work.agent_dir, work.env.root)
    for n in range(16):
        target = f"loop-seen-{n}"
        pid = agents.spawn(target, f"c-seen-{n}")
        with panes.seen_ending(ctx, target):
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda t=target: _ended_by_kill(work, t), 5, what=f"{target} seen ended")
        assert work.tmux("show-buffer", "-b", f"the-loop-record-{target}").returncode == 0


def _ended_by_kill(work: Work, target: str) -> bool:
    """Whether tmux has seen TARGET's program end by SIGKILL (asked without the-loop, which
    would wake tmux's reaper itself)."""
    shown = work.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_dead_signal}")
    return shown.stdout.strip() == "9"
