"""Slack both ways: a thread reply reaches the agent, and the agent's answer (each turn's final
message) comes back into that thread once, escaped, split when long, in order, and not again
after a daemon restart — for a standing session's thread and a work item's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.attention.hooks import hook_env, issue, run_hook
from tests.fakes.fake_github import FakeGitHub
from tests.fakes.fake_slack import FakeSlack, Message
from tests.helpers import wait_until
from tests.slack.conftest import CHANNEL, STANDING, Slack, standing_served, start
from tests.slack.test_work_items import ATTENTION, items_daemon, spawn
from tests.work import Work
from the_loop.outbox.slack_turns import PART_LIMIT

PING = "all clear <!channel> @here <https://evil.example|harmless>"


def said(slack: Slack, thread: str, words: str) -> list[Message]:
    return [m for m in slack.fake.thread(CHANNEL, thread) if words in m.text]


def answered(slack: Slack, thread: str, words: str, timeout: float = 30) -> Message:
    """The one post in THREAD containing WORDS (waited for)."""
    posts = wait_until(lambda: said(slack, thread, words), timeout, what=f"a post of {words!r}")
    return posts[0]


def escaped(message: Message) -> None:
    assert "&lt;!channel&gt;" in message.text and "<!channel>" not in message.text
    assert "@\u2060here" in message.text
    assert "&lt;https://evil.example|harmless&gt;" in message.text


@pytest.fixture
def standing_answers(work: Work, fake_slack: FakeSlack) -> Iterator[Slack]:
    with standing_served(work, fake_slack, attention=ATTENTION) as slack:
        yield slack


def test_a_standing_sessions_answer_comes_back_once_escaped_and_not_after_a_restart(
    standing_answers: Slack,
) -> None:
    slack = standing_answers
    thread = slack.announcement(f"*{STANDING}*").ts
    conversation = slack.standing_conversation()
    answered(slack, thread, "FAKE-AGENT GOT #1")  # its first turn: the standing prompt

    assert slack.reply(f"ANSWER: {PING}", thread).status_code == 200
    slack.work.wait_prompts(conversation, 2)
    escaped(answered(slack, thread, "all clear"))

    slack.daemon.stop()
    slack.daemon = start(slack.work, slack.fake)
    # the restarted screen detector takes the pane, unchanged since, for as quiet as it was
    # (decision 0080); whenever it reads it, what it already told is not told again
    slack.work.wait_attention(f"standing:{STANDING}", "waiting", 30)
    assert slack.reply("ANSWER: second turn", thread).status_code == 200
    answered(slack, thread, "second turn")
    posts = [m.text for m in slack.fake.thread(CHANNEL, thread)]
    assert len(posts) == 3 and posts[-1].endswith("second turn"), posts  # nothing in between
    assert "all clear" not in posts[-1]  # the screen's lines already told are not told again


@pytest.fixture
def items_answers(work: Work, fake_slack: FakeSlack, gh: FakeGitHub) -> Iterator[Slack]:
    daemon = items_daemon(work, fake_slack, gh, mirrorToGitHub=False)
    try:
        yield Slack(daemon, fake_slack)
    finally:
        daemon.stop()


def test_a_work_items_thread_hears_its_answers_escaped_and_long_ones_split_in_order(
    items_answers: Slack, gh: FakeGitHub
) -> None:
    slack = items_answers
    ref, _, sid = spawn(slack, gh)
    thread = slack.announcement(ref).ts
    answered(slack, thread, "FAKE-AGENT GOT #1")

    assert slack.reply(f"ANSWER: {PING}", thread).status_code == 200
    slack.work.wait_prompts(sid, 2)
    escaped(answered(slack, thread, "all clear"))

    before = len(slack.fake.thread(CHANNEL, thread))
    slack.fake.fail_next()  # the first part's first try fails: the others wait for it
    assert slack.reply("ANSWER-LONG: 700", thread).status_code == 200
    words = [f"word{n:05d}" for n in range(700)]
    wait_until(
        lambda: any(words[-1] in m.text for m in slack.fake.thread(CHANNEL, thread)),
        30,
        what="the last part",
    )
    parts = slack.fake.thread(CHANNEL, thread)[before:]
    assert len(parts) == 3, [len(m.text) for m in parts]
    assert all(len(m.text) <= PART_LIMIT for m in parts)
    text = " ".join(m.text for m in parts)
    assert [w for w in text.split() if w.startswith("word")] == words
    assert len(said(slack, thread, "all clear")) == 1


def test_a_turn_reported_by_hooks_is_posted_once_and_an_empty_one_not_at_all(
    work: Work, fake_slack: FakeSlack
) -> None:
    """The hooks Claude Code runs (``the-loop hook`` over the hook channel): ``Stop`` with the
    agent's last message is a turn's end; sent again, or with no message, it posts nothing."""
    hooks_only = {**ATTENTION, "harnesses": {"fake": {"signals": "hooks"}}}
    with standing_served(work, fake_slack, attention=hooks_only) as slack:
        thread = slack.announcement(f"*{STANDING}*").ts
        agent = f"standing:{STANDING}"
        env = hook_env(work.env, issue(work.env, agent=agent), agent=agent)

        def turn(message: str | None) -> None:
            for data in ({"hook_event_name": "UserPromptSubmit"}, {"hook_event_name": "Stop"}):
                if message is not None and data["hook_event_name"] == "Stop":
                    data["last_assistant_message"] = message
                done = run_hook(env, data)
                assert done.returncode == 0 and not done.stderr, done.stderr

        turn("**Fixed** it. <!here>")
        resent = run_hook(
            env, {"hook_event_name": "Stop", "last_assistant_message": "**Fixed** it. <!here>"}
        )
        assert resent.returncode == 0
        turn(None)
        turn("  \n ")
        turn("Third.")
        answered(slack, thread, "Third.")
        posts = [m.text for m in fake_slack.thread(CHANNEL, thread)]
        assert posts == ["*Fixed* it. &lt;!here&gt;", "Third."], posts
        assert not work.events("writeback.failed")  # nothing was even tried for the empty ones


def test_a_turn_ended_between_two_screen_passes_is_heard_by_its_answer(
    work: Work, fake_slack: FakeSlack
) -> None:
    """The demo agent answers at once, under its prompt (its ``waitingPatterns``): the screen
    detector may never see it working, yet each answer reaches the thread once, and not by the
    quiet time, which here never ends (decision 0092)."""
    never_quiet = {**ATTENTION, "quietSeconds": 3600}
    with standing_served(work, fake_slack, "demo", attention=never_quiet) as slack:
        thread = slack.announcement(f"*{STANDING}*").ts
        answered(slack, thread, "demo: you asked: watch the queue")
        for n, words in enumerate(("first reply", "second reply", "third reply"), start=2):
            assert slack.reply(words, thread).status_code == 200
            answered(slack, thread, f"demo: message {n} received")
        posts = [m.text for m in fake_slack.thread(CHANNEL, thread)]
        assert len(posts) == 4, posts
        assert [p.split("\n")[1] for p in posts] == [
            "demo: you asked: watch the queue",
            "demo: you asked: first reply",
            "demo: you asked: second reply",
            "demo: you asked: third reply",
        ], posts
