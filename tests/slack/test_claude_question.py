"""A question in the thread, with the real Claude Code (against the fake Messages API) as the
standing session announced in a fake Slack: its ``AskUserQuestion`` dialog is posted once with
a button per choice and how to type an answer — never "your message is delivered", since the
delivery gate holds other replies; a stranger's press changes nothing; Alice's press types the
choice into the dialog, the model gets it, and the message says who answered what; a second
question is answered by typing ``the-loop answer <id> …`` in the thread."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.attention.test_claude_question import QUESTION, answer_of
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.fakes.fake_slack import FakeSlack
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.slack.conftest import ALICE, CHANNEL, MALLORY, STANDING, Slack, standing_served
from tests.slack.test_buttons import buttons, state
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
REF = f"standing:{STANDING}"


def reply(request: RecordedRequest) -> str | ToolUse:
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return "THANKS-FOR-THE-ANSWER"
    if "ASK-ME" in (request.prompt or ""):
        return ToolUse("AskUserQuestion", QUESTION, "toolu_ask_1")
    if "ASK-AGAIN" in (request.prompt or ""):
        return ToolUse("AskUserQuestion", QUESTION, "toolu_ask_2")
    return f"FAKE-REPLY-{request.seq}"


@pytest.fixture
def claude_standing(work: Work, fake_slack: FakeSlack) -> Iterator[tuple[Slack, FakeAnthropic]]:
    root = work.env.root
    (root / "home").mkdir(exist_ok=True)
    with FakeAnthropic(reply=reply) as api:
        claude = {**api.claude_env(root / "claude-config"), "HOME": str(root / "home")}
        sections: dict[str, Any] = {
            "harnesses": {"claude": {"binary": str(CLAUDE_BIN), "env": claude}},
            "routing": {"defaultHarness": "claude"},
            "attention": {"pollSeconds": 0.1, "notifyAfterSeconds": 0},
        }
        with standing_served(work, fake_slack, **sections) as slack:
            yield slack, api


@pytest.mark.timeout(240)
def test_a_question_in_the_thread_is_answered_by_its_choice_button(
    claude_standing: tuple[Slack, FakeAnthropic],
) -> None:
    slack, api = claude_standing
    work = slack.work
    thread = slack.announcement(f"*{STANDING}*").ts
    wait_until(lambda: state(work, REF).get("state") == "waiting", 120, what="Claude Code ready")
    assert slack.reply("please ASK-ME now", thread).status_code == 200
    wait_until(lambda: state(work, REF).get("state") == "needs-input", 60, what="the question")
    prompt_id = state(work, REF)["prompt"]["id"]
    notice = slack.prompt_message(thread, prompt_id)
    assert "Which database?" in notice.text and "Pick a choice below" in notice.text
    assert "Other replies wait until it is answered" in notice.text, notice.text
    assert "delivered" not in notice.text
    assert [(b["action_id"], b["value"], b["text"]["text"]) for b in buttons(notice)] == [
        ("the_loop_answer", f"{prompt_id}.1", "1. SQLite"),
        ("the_loop_answer", f"{prompt_id}.2", "2. PostgreSQL"),
    ]

    assert slack.press(prompt_id, notice.ts, user=MALLORY, choice=1).status_code == 200
    assert slack.dropped("unauthorized")["payload"]["user"] == MALLORY
    assert state(work, REF)["prompt"]["pending"] is True

    assert slack.press(prompt_id, notice.ts, choice=2).status_code == 200
    wait_until(lambda: "PostgreSQL" in answer_of(api, "toolu_ask_1"), 40, what="the choice")
    wait_until(lambda: notice.updates >= 1, 30, what="the message updated")
    assert f"*Answered* `2. PostgreSQL` by <@{ALICE}> (via slack)" in notice.text, notice.text
    assert buttons(notice) == []
    wait_until(
        lambda: any("THANKS-FOR-THE-ANSWER" in m.text for m in slack.fake.thread(CHANNEL, thread)),
        60,
        what="the agent's next answer in the thread",
    )

    # a second question, answered by typing the command in the thread
    assert slack.reply("please ASK-AGAIN now", thread).status_code == 200
    wait_until(
        lambda: (state(work, REF).get("prompt") or {}).get("id") not in (None, prompt_id),
        60,
        what="the second question",
    )
    second = state(work, REF)["prompt"]["id"]
    again = slack.prompt_message(thread, second)
    assert f"reply `the-loop answer {second} <your answer>`" in again.text, again.text
    assert slack.reply(f"the-loop answer {second} MySQL please", thread).status_code == 200
    wait_until(lambda: "MySQL please" in answer_of(api, "toolu_ask_2"), 40, what="the typed one")
    wait_until(lambda: again.updates >= 1, 30, what="the second message updated")
    assert f"*Answered* `MySQL please` by <@{ALICE}> (via slack)" in again.text, again.text
