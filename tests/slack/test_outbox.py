"""Slack posts go through the outbox: a 429 with Retry-After is waited out and the post is
made exactly once; a post whose answer was lost (the call took effect, then a 5xx) is found
again by its metadata token instead of being posted twice."""

from __future__ import annotations

import json

from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.slack.conftest import CHANNEL, STANDING, Slack, slack_section, standing_section, start
from tests.work import Work


def slack_rows(work: Work) -> list[dict[str, object]]:
    result = work.cli("outbox", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    return [r for r in json.loads(result.stdout) if r["target"] == "slack"]


def run(work: Work, fake: FakeSlack) -> Slack:
    work.configure(slack=slack_section(fake), standing=standing_section())
    return Slack(start(work, fake), fake)


def test_429_then_200_posts_exactly_once(work: Work, fake_slack: FakeSlack) -> None:
    fake_slack.rate_limit_next(1, retry_after=1)
    slack = run(work, fake_slack)
    try:
        slack.announcement(f"*{STANDING}*")
        wait_until(lambda: slack_rows(work)[0]["status"] == "done", 30, what="row done")
        assert fake_slack.count("chat.postMessage", 429) == 1
        assert fake_slack.count("chat.postMessage", 200) == 1
        assert len(fake_slack.posts(CHANNEL)) == 1
        row = slack_rows(work)[0]
        assert row["attempts"] == 2 and row["kind"] == "slack"
        posted = work.events("slack.posted")
        assert len(posted) == 1 and posted[0]["payload"]["method"] == "chat.postMessage"
    finally:
        slack.daemon.stop()
        work.cli("standing", "stop")


def test_a_lost_answer_is_not_posted_twice(work: Work, fake_slack: FakeSlack) -> None:
    fake_slack.lose_answer_next(1)
    slack = run(work, fake_slack)
    try:
        wait_until(lambda: slack_rows(work)[0]["status"] == "done", 60, what="row done")
        assert fake_slack.count("chat.postMessage", 502) == 1
        assert fake_slack.count("conversations.history") >= 1
        assert len(fake_slack.posts(CHANNEL)) == 1
        # the binding took the ts of the post that was found: replies are delivered
        thread = fake_slack.posts(CHANNEL)[0].ts
        conversation = slack.standing_conversation()
        assert slack.reply("found you", thread).status_code == 200
        wait_until(
            lambda: any("found you" in p for p in work.prompts(conversation)), 30, what="reply"
        )
    finally:
        slack.daemon.stop()
        work.cli("standing", "stop")


def test_a_wrong_bot_token_is_refused_for_good(work: Work, fake_slack: FakeSlack) -> None:
    work.configure(slack=slack_section(fake_slack), standing=standing_section())
    daemon = start(work, fake_slack, SLACK_BOT_TOKEN="xoxb-wrong")
    try:
        wait_until(lambda: slack_rows(work) and slack_rows(work)[0]["status"] == "failed", 30)
        row = slack_rows(work)[0]
        assert "invalid_auth" in str(row["lastError"])
        assert fake_slack.posts() == []
        assert work.events("writeback.failed")
    finally:
        daemon.stop()
        work.cli("standing", "stop")
