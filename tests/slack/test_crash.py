"""Across real crashes (SIGKILL at a named step): a Slack event acknowledged but not yet
processed is delivered once after the restart; an announcement posted whose outcome was not
recorded is found again in the channel, not posted twice."""

from __future__ import annotations

import json

from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.slack.conftest import CHANNEL, STANDING, Slack, slack_section, standing_section, start
from tests.work import Work


def died(slack: Slack) -> bool:
    proc = slack.daemon.proc
    return proc is not None and proc.poll() is not None


def test_an_acknowledged_event_survives_a_crash_before_processing(
    work: Work, fake_slack: FakeSlack
) -> None:
    work.configure(slack=slack_section(fake_slack), standing=standing_section())
    slack = Slack(start(work, fake_slack, THE_LOOP_CRASH_AT="slack-before-process"), fake_slack)
    try:
        thread = slack.announcement(f"*{STANDING}*").ts
        conversation = slack.standing_conversation()
        work.wait_prompts(conversation, 1)
        assert slack.reply("survive this", thread, event_id="Ev0CRASH001").status_code == 200
        wait_until(lambda: died(slack), 30, what="the daemon killed at the crash point")
        assert not any("survive this" in p for p in work.prompts(conversation))
        slack.daemon.stop()
        slack = Slack(start(work, fake_slack), fake_slack)
        prompts = work.wait_prompts(conversation, 2, timeout=30)
        assert sum("survive this" in p for p in prompts) == 1
        # Slack retrying the event after the crash is a duplicate, not a second delivery
        again = slack.reply("survive this", thread, event_id="Ev0CRASH001")
        assert again.status_code == 200 and again.json()["duplicate"] is True
        assert sum("survive this" in p for p in work.prompts(conversation)) == 1
    finally:
        slack.daemon.stop()
        work.cli("standing", "stop")


def test_a_post_whose_outcome_was_lost_in_a_crash_is_not_posted_twice(
    work: Work, fake_slack: FakeSlack
) -> None:
    config = json.loads(json.dumps(standing_section()))
    config["sessions"][0]["autoStart"] = False
    work.configure(slack=slack_section(fake_slack), standing=config)
    slack = Slack(start(work, fake_slack, THE_LOOP_CRASH_AT="slack-after-post"), fake_slack)
    try:
        assert work.cli("standing", "start", STANDING).exit_code == 0
        wait_until(lambda: died(slack), 30, what="the daemon killed after the post")
        assert len(fake_slack.posts(CHANNEL)) == 1
        slack.daemon.stop()
        slack = Slack(start(work, fake_slack), fake_slack)

        def done() -> bool:
            rows = json.loads(work.cli("outbox", "list", "--format", "json").stdout)
            return any(r["target"] == "slack" and r["status"] == "done" for r in rows)

        wait_until(done, 30, what="the row recorded done")
        assert len(fake_slack.posts(CHANNEL)) == 1
        assert fake_slack.count("conversations.history") >= 1
        thread = fake_slack.posts(CHANNEL)[0].ts
        conversation = slack.standing_conversation()
        assert slack.reply("bound after all", thread).status_code == 200
        wait_until(
            lambda: any("bound after all" in p for p in work.prompts(conversation)),
            30,
            what="the reply through the recovered binding",
        )
    finally:
        slack.daemon.stop()
        work.cli("standing", "stop")
