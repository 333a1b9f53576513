"""Gemini in a window under 80 columns (decision 0106): the real Gemini CLI (pinned) under the
daemon, in real tmux, against the fake Gemini API. A phone viewing an agent makes its window
as narrow as the phone's terminal (decision 0042), and there Gemini draws no ``? for
shortcuts`` hint: the-loop still reads its turn over at once, and a daemon that has not seen it
ready yet (just restarted) still delivers to it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_gemini import FakeGemini, GeminiRequest, default_reply
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
]
REF = "local:gemini-phone"
COLUMNS = 48
"""A phone's browser terminal, held upright."""


@pytest.fixture
def gemini(work: Work) -> Iterator[tuple[Daemon, FakeGemini, threading.Event]]:
    """Gemini in a window as narrow as a phone's terminal from its start (nothing drawn wider
    left on its screen), against a fake that answers a prompt marked SLOW once let."""
    answer = threading.Event()

    def reply(request: GeminiRequest) -> str:
        if "SLOW" in (request.prompt or ""):  # at work until the test lets it answer
            answer.wait(60)
        return default_reply(request)

    with FakeGemini(reply=reply) as api:
        env = api.gemini_env(work.env.root / "gemini-home")
        work.configure(
            harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env}},
            routing={"defaultHarness": "gemini"},
            tmux={"windowSize": f"{COLUMNS}x30"},
            # only a screen rule can read the turn over: the quiet time never comes
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600, "quietSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api, answer


def reached(api: FakeGemini, mark: str) -> bool:
    """Whether a turn with MARK in its newest message was answered (the fake records a turn
    once it answered it)."""
    return any(mark in prompt for prompt in api.user_prompts())


def waiting(work: Work) -> list[str]:
    """The rules of each change to ``waiting``, in order."""
    changed = [e["payload"] for e in work.events("session.attention_changed")]
    return [str(c["rule"]) for c in changed if c["to"] == "waiting"]


def test_a_gemini_in_a_narrow_window_reads_waiting_and_takes_messages(
    work: Work, gemini: tuple[Daemon, FakeGemini, threading.Event]
) -> None:
    daemon, api, answer = gemini
    assert work.cli("sessions", "start", REF, "--prompt", "KILO-1 SLOW first").exit_code == 0
    target = work.session_json(REF)["tmuxTarget"]
    wait_until(
        lambda: (
            "\u2500" * COLUMNS + "\n" in work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
        ),
        60,
        what="Gemini drawn narrow",
    )
    assert work.attention(REF)["state"] == "working"  # its turn not over: no answer yet
    answer.set()
    wait_until(lambda: reached(api, "KILO-1"), 60, what="the first turn")
    rules = wait_until(lambda: waiting(work), 60, what="its turn over, read narrow")
    assert rules[0].startswith("waitingPatterns[1]"), rules
    screen = work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
    assert "for shortcuts" not in screen, screen

    daemon.stop()  # the next daemon has not seen it ready: it waits for it to read ready
    daemon.start()
    said = work.cli("sessions", "say", REF, "-t", "LIMA-2 second")
    assert said.exit_code == 0, said.stderr
    wait_until(lambda: reached(api, "LIMA-2"), 20, what="the message after the restart")
