"""A Slack thread bound to a Gemini agent (the real CLI, pinned, against the fake Gemini API)
hears each of its answers once, and only the answer: Gemini draws its input box, hints and
footer under what it says, and the screen's last lines were what a screen-read agent's turn
posted (the same chrome every turn: a thread heard the footer once, then nothing)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_slack import FakeSlack
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.slack.conftest import CHANNEL, STANDING, Slack, standing_served
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
]


@pytest.fixture
def gemini_thread(work: Work, fake_slack: FakeSlack) -> Iterator[Slack]:
    with FakeGemini() as api:
        env = api.gemini_env(work.env.root / "gemini-home")
        with standing_served(
            work,
            fake_slack,
            harness="gemini",
            harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env}},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        ) as slack:
            yield slack


def posts(slack: Slack, thread: str) -> list[str]:
    return [m.text for m in slack.fake.thread(CHANNEL, thread)]


def test_a_gemini_thread_hears_each_answer_once_and_nothing_of_its_input_box(
    gemini_thread: Slack,
) -> None:
    slack = gemini_thread
    thread = slack.announcement(f"*{STANDING}*", timeout=60).ts
    try:
        first = wait_until(lambda: posts(slack, thread), 90, what="the first answer in the thread")
    except AssertionError as exc:
        screen = slack.work.cli("standing", "logs", STANDING).stdout
        raise AssertionError(f"{exc}; the agent's screen:\n{screen}") from None
    assert len(first) == 1 and first[0].startswith("FAKE-GEMINI-REPLY-"), first
    assert "\n" not in first[0], first  # the answer, not the box and footer under it

    assert slack.reply("and how is the queue now?", thread).status_code == 200
    both = wait_until(
        lambda: (p := posts(slack, thread))[1:] and p,
        90,
        what="the second answer in the thread",
    )
    assert both[1].startswith("FAKE-GEMINI-REPLY-") and both[1] != both[0], both
    assert "\n" not in both[1], both
    slack.work.wait_attention(f"standing:{STANDING}", "waiting", 30)
    assert posts(slack, thread) == both, "each answer once"
