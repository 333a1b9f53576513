"""A standing session with Slack enabled: announced once, a reply by an authorized user
reaches its pane with actor ``slack:<user>``, and after ``standing restart`` the same thread
still works (the binding is in the database)."""

from __future__ import annotations

from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.slack.conftest import (
    ALICE,
    CHANNEL,
    STANDING,
    Slack,
    slack_section,
    standing_section,
    start,
)
from tests.work import Work


def test_announced_once_reply_reaches_the_pane_and_survives_restarts(
    standing_slack: Slack,
) -> None:
    slack = standing_slack
    announced = slack.announcement(f"*{STANDING}*")
    assert announced.channel == CHANNEL
    conversation = slack.standing_conversation()
    slack.work.wait_prompts(conversation, 1)
    assert slack.reply("please look at the queue", announced.ts).status_code == 200
    prompts = slack.work.wait_prompts(conversation, 2)
    assert prompts[-1].startswith(f"Message from slack:{ALICE} to standing session `{STANDING}`:")
    assert "please look at the queue" in prompts[-1]
    said = slack.work.events("standing.said")
    assert said and said[-1]["payload"]["actor"] == f"slack:{ALICE}"

    restarted = slack.work.cli("standing", "restart", STANDING)
    assert restarted.exit_code == 0, restarted.stderr
    assert slack.standing_conversation() == conversation  # resumed
    assert slack.reply("still there?", announced.ts).status_code == 200
    wait_until(
        lambda: any("still there?" in p for p in slack.work.prompts(conversation)),
        30,
        what="the reply after the restart",
    )
    top = [m for m in slack.fake.posts(CHANNEL) if m.thread_ts is None]
    assert len(top) == 1, [m.text for m in top]


def test_the_daemon_restarted_keeps_the_thread(work: Work, fake_slack: FakeSlack) -> None:
    work.configure(slack=slack_section(fake_slack), standing=standing_section())
    daemon = start(work, fake_slack)
    try:
        slack = Slack(daemon, fake_slack)
        thread = slack.announcement(f"*{STANDING}*").ts
        conversation = slack.standing_conversation()
        daemon.stop()
        daemon = start(work, fake_slack)
        slack = Slack(daemon, fake_slack)
        assert slack.reply("after the daemon restart", thread).status_code == 200
        wait_until(
            lambda: any("after the daemon restart" in p for p in work.prompts(conversation)),
            30,
            what="delivered through the stored binding",
        )
        assert len([m for m in fake_slack.posts(CHANNEL) if m.thread_ts is None]) == 1
    finally:
        daemon.stop()
        work.cli("standing", "stop")
