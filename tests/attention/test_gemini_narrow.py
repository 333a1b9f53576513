"""Gemini in a window under 80 columns (decision 0106): the real Gemini CLI (pinned) under the
daemon, in real tmux, against the fake Gemini API. A phone viewing an agent makes its window
as narrow as the phone's terminal (decision 0042), and there Gemini draws no ``? for
shortcuts`` hint: the-loop still reads its turn over at once, and a daemon that has not seen it
ready yet (just restarted) still delivers to it."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_gemini import FakeGemini, GeminiRequest, default_reply
from tests.gemini_daemon import NEEDS_GEMINI, gemini_daemon
from tests.helpers import wait_until
from tests.work import Work

pytestmark = NEEDS_GEMINI
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

    narrow = {"windowSize": f"{COLUMNS}x30"}
    quiet = {"quietSeconds": 3600}  # only a screen rule can read the turn over
    with (
        FakeGemini(reply=reply) as api,
        gemini_daemon(work, api, tmux=narrow, attention=quiet) as d,
    ):
        yield d, api, answer


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
    # its turn under way, read from its spinner: the start returns once the prompt is sent,
    # when the last pass may still hold the idle screen it read before
    work.wait_attention(REF, "working", 30)
    before = len(waiting(work))
    answer.set()
    wait_until(lambda: reached(api, "KILO-1"), 60, what="the first turn")
    rules = wait_until(lambda: waiting(work)[before:], 60, what="its turn over, read narrow")
    assert rules[0].startswith("waitingPatterns[1]"), rules
    screen = work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
    assert "for shortcuts" not in screen, screen

    daemon.stop()  # the next daemon has not seen it ready: it waits for it to read ready
    daemon.start()
    said = work.cli("sessions", "say", REF, "-t", "LIMA-2 second")
    assert said.exit_code == 0, said.stderr
    wait_until(lambda: reached(api, "LIMA-2"), 20, what="the message after the restart")
