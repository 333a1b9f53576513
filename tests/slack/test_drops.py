"""What is dropped with ``slack.dropped`` and a reason, and never reaches an agent: bot
messages (our own announcement included), edits and deletions, users not authorized, threads
bound to nothing, top-level messages, and messages to a stopped standing session (answered in
the thread with how to start it)."""

from __future__ import annotations

from tests.helpers import wait_until
from tests.slack.conftest import ALICE, CHANNEL, MALLORY, STANDING, Slack


def test_bots_edits_strangers_and_unbound_threads_are_dropped(standing_slack: Slack) -> None:
    slack = standing_slack
    thread = slack.announcement(f"*{STANDING}*").ts
    conversation = slack.standing_conversation()
    slack.work.wait_prompts(conversation, 1)

    ours = {"bot_id": "BBOT0000001", "user": "UBOT0000001"}
    assert slack.reply("echo of our own post", thread, fields=ours).status_code == 200
    assert slack.dropped("bot-message")["payload"]["channel"] == CHANNEL
    other_bot = {"subtype": "bot_message", "bot_id": "BOTHER0001"}
    assert slack.reply("another bot", thread, fields=other_bot).status_code == 200
    edit = {
        "subtype": "message_changed",
        "message": {"type": "message", "user": ALICE, "text": "edited text", "ts": thread},
    }
    assert slack.reply("", thread, fields=edit).status_code == 200
    assert slack.dropped("edited")
    deletion = {"subtype": "message_deleted", "deleted_ts": thread}
    assert slack.reply("", thread, fields=deletion).status_code == 200
    assert slack.dropped("deleted")
    assert slack.reply("let me in", thread, user=MALLORY).status_code == 200
    assert slack.dropped("unauthorized")["payload"]["user"] == MALLORY
    assert slack.reply("anyone?", "1700000000.000001").status_code == 200
    assert slack.dropped("unbound-thread")
    top_level = {"type": "message", "channel": CHANNEL, "user": ALICE, "text": "hi", "ts": "1.2"}
    assert slack.event(top_level).status_code == 200
    assert slack.dropped("not-in-a-thread")

    drops = slack.work.events("slack.dropped")
    bot_drops = [e for e in drops if e["payload"]["reason"] == "bot-message"]
    assert len(bot_drops) == 2 and {e["level"] for e in bot_drops} == {"debug"}
    levels = {e["payload"]["reason"]: e["level"] for e in drops}
    assert levels["unauthorized"] == levels["unbound-thread"] == levels["edited"] == "info"
    # none of it reached the agent; a genuine reply afterwards does
    assert slack.reply("the real one", thread).status_code == 200
    prompts = slack.work.wait_prompts(conversation, 2)
    assert len(prompts) == 2 and "the real one" in prompts[-1]


def test_a_message_to_a_stopped_standing_session_says_how_to_start_it(
    standing_slack: Slack,
) -> None:
    slack = standing_slack
    thread = slack.announcement(f"*{STANDING}*").ts
    conversation = slack.standing_conversation()
    slack.work.wait_prompts(conversation, 1)
    stopped = slack.work.cli("standing", "stop", STANDING)
    assert stopped.exit_code == 0, stopped.stderr
    assert slack.reply("are you there?", thread).status_code == 200
    assert slack.dropped("standing-stopped")["standing"] == STANDING

    def told() -> list[str]:
        return [m.text for m in slack.fake.thread(CHANNEL, thread)]

    replies = wait_until(told, 30, what="the reply in the thread")
    assert any(f"`the-loop standing start {STANDING}`" in r for r in replies), replies  # type: ignore[union-attr]
    assert len(slack.work.prompts(conversation)) == 1
