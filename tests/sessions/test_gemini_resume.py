"""The message that wakes a suspended Gemini agent reaches it (the real CLI, pinned, against the
fake Gemini API), in the conversation it resumed. A resumed Gemini draws an idle screen before
it loads the conversation, then shows "Resuming session..." without its input box (a paste then
is lost) and takes input once the box is back: the-loop's ready pattern needs the box, so the
waking message is pasted after."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_gemini import FakeGemini
from tests.gemini_daemon import NEEDS_GEMINI, gemini_daemon
from tests.helpers import wait_until
from tests.work import Work

pytestmark = NEEDS_GEMINI
REF = "local:again"


@pytest.fixture
def gemini(work: Work) -> Iterator[tuple[Daemon, FakeGemini]]:
    with FakeGemini() as api:
        suspended = {"suspendAfterMinutes": 0.05}  # 3 s idle, then suspended
        with gemini_daemon(work, api, sessions=suspended) as daemon:
            yield daemon, api


def test_the_message_that_wakes_a_suspended_gemini_reaches_it(
    work: Work, gemini: tuple[Daemon, FakeGemini]
) -> None:
    """A suspended agent is resumed by the message that arrives for it, which is pasted as
    soon as the resumed agent reads ready (the resume and the paste in one process)."""
    _, api = gemini
    assert work.cli("sessions", "start", REF, "--prompt", "remember BLUE").exit_code == 0
    wait_until(lambda: any("BLUE" in p for p in api.user_prompts()), 60, what="the first turn")
    wait_until(lambda: work.events("session.suspended"), 60, what="the idle agent suspended")

    said = work.cli("sessions", "say", REF, "-t", "AFTER-WAKE what colour?")
    assert said.exit_code == 0, said.stderr
    turn = wait_until(
        lambda: [r for r in api.conversation_turns() if "AFTER-WAKE" in (r.prompt or "")],
        45,
        what="the waking message at the model",
    )
    texts = turn[0].user_texts()
    assert any("BLUE" in t for t in texts[:-1]), "the same conversation, resumed"
    respawned = work.events("session.respawned")
    assert respawned and respawned[-1]["payload"]["resumed"] is True, respawned
