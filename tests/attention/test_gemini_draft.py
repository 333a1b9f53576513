"""A message to Gemini waits behind a person's draft (decision 0105): the real Gemini CLI
(pinned) under the daemon, in real tmux, against the fake Gemini API. Someone types into the
agent's input box and does not send it; a message that comes then waits until the text is
cleared or sent, and reaches the model on its own. Before, it was pasted behind the draft and
its Enter sent both as one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.attention.test_claude_submit import say_held, type_draft
from tests.daemon import Daemon
from tests.fakes.fake_gemini import FakeGemini
from tests.gemini_daemon import NEEDS_GEMINI, gemini_daemon
from tests.helpers import wait_until
from tests.work import Work

pytestmark = NEEDS_GEMINI
REF = "local:gemini-draft"


@pytest.fixture
def gemini(work: Work) -> Iterator[tuple[Daemon, FakeGemini]]:
    with FakeGemini() as api, gemini_daemon(work, api) as daemon:
        yield daemon, api


def turns_with(api: FakeGemini, mark: str) -> list[list[str]]:
    """The user texts of each turn whose newest message holds MARK."""
    return [r.user_texts() for r in api.conversation_turns() if mark in (r.prompt or "")]


def first_turn(work: Work, api: FakeGemini, mark: str) -> str:
    """Start the agent with a first message marked MARK and wait for its answer; its target."""
    assert work.cli("sessions", "start", REF, "--prompt", f"{mark} first").exit_code == 0
    wait_until(lambda: turns_with(api, mark), 60, what="the first turn")
    wait_until(lambda: work.attention(REF)["state"] == "waiting", 60, what="the first answer")
    return str(work.session_json(REF)["tmuxTarget"])


def test_a_message_to_gemini_waits_behind_a_persons_draft(
    work: Work, gemini: tuple[Daemon, FakeGemini]
) -> None:
    daemon, api = gemini
    target = first_turn(work, api, "KILO-1")

    type_draft(work, target, "LIMA typed by a person")
    say_held(daemon, REF, "MIKE-2 second")
    assert not turns_with(api, "MIKE-2") and not turns_with(api, "LIMA")
    work.tmux("send-keys", "-t", f"={target}:", "C-u")  # the person clears it
    sent = wait_until(lambda: turns_with(api, "MIKE-2"), 60, what="the message, once cleared")
    assert sent[0][-1].strip().endswith("\n\nMIKE-2 second"), sent  # on its own
    assert not any("LIMA" in text for text in sent[0]), sent
    wait_until(lambda: work.attention(REF)["state"] == "waiting", 60, what="its answer")

    type_draft(work, target, "NOVEMBER typed by a person")
    say_held(daemon, REF, "OSCAR-3 third")
    work.tmux("send-keys", "-t", f"={target}:", "Enter")  # the person sends it
    mine = wait_until(lambda: turns_with(api, "NOVEMBER"), 60, what="the person's draft")
    assert mine[0][-1].strip() == "NOVEMBER typed by a person", mine
    theirs = wait_until(lambda: turns_with(api, "OSCAR-3"), 60, what="the held message")
    assert theirs[0][-1].strip().endswith("\n\nOSCAR-3 third"), theirs
    assert not any("NOVEMBER" in text for text in theirs[0][-1:]), theirs
    reasons = [e["payload"]["reason"] for e in work.events("session.held")]
    assert len([r for r in reasons if "unsent text" in r]) == 2, reasons


def test_a_message_to_gemini_waits_while_a_person_left_its_box_in_shell_mode(
    work: Work, gemini: tuple[Daemon, FakeGemini]
) -> None:
    """A "!" typed into Gemini's box switches it to shell mode, where what is sent runs as a
    shell command: a message that comes then waits until the person leaves shell mode, and
    reaches the model. Before, it was pasted there and run by the shell (``bash: syntax error
    near unexpected token `('``), and never reached the model."""
    daemon, api = gemini
    target = first_turn(work, api, "PAPA-1")

    type_draft(work, target, "!")
    wait_until(
        lambda: (
            "Type your shell command" in work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
        ),
        15,
        what="shell mode",
    )
    say_held(daemon, REF, "QUEBEC-2 second")
    work.tmux("send-keys", "-t", f"={target}:", "Escape")  # the person leaves shell mode
    sent = wait_until(lambda: turns_with(api, "QUEBEC-2"), 60, what="the message at the model")
    assert sent[0][-1].strip().endswith("\n\nQUEBEC-2 second"), sent
    assert "Shell Command" not in work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
