"""A daemon stops promptly while one of its threads waits for an agent to take input: an agent
that never shows a prompt (here a program that prints nothing) held a delivery's thread for
``READY_TIMEOUT`` (60 s), and the daemon's exit waited for it (``the-loop stop`` gave up after
10 s and killed it; a test's teardown timed out). The wait now ends when the daemon stops,
and the delivery is retried by the next start."""

from __future__ import annotations

from tests.daemon import Daemon, served
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

MUTE = {"adapter": "command", "interactive": ["/bin/sh", "-c", "exec sleep 600"]}


def test_a_daemon_waiting_for_an_agent_to_take_input_stops_promptly(work: Work) -> None:
    work.configure(
        github={"enabled": True}, harnesses={"mute": MUTE}, routing={"defaultHarness": "mute"}
    )
    daemon: Daemon
    with served(work) as daemon:
        sent = daemon.post("issue_comment", P.issue_comment_event("the-loop start"), "d-mute")
        assert sent.status_code == 202, sent.text
        wait_until(lambda: work.events("session.spawned"), 60, what="the session started")
        # its first prompt waits for the agent to show something; stopping must not wait
        assert daemon.proc is not None
        daemon.stop()  # SIGTERM, then waits at most 10 s for the process to exit
    assert daemon.proc is None
