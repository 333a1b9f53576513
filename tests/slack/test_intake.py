"""The Slack routes over HTTP: the URL verification handshake, signatures and stale
timestamps refused with nothing stored or delivered, and Slack's retries of one event id
delivered once."""

from __future__ import annotations

import json
import time

from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.slack.conftest import ALICE, CHANNEL, STANDING, Slack, slack_section, start
from tests.work import Work


def inbox(slack: Slack) -> list[dict[str, object]]:
    result = slack.work.cli("inbox", "list", "--format", "json")
    assert result.exit_code == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return [r for r in rows if r["source"] == "slack"]


def test_url_verification_answers_the_challenge(standing_slack: Slack) -> None:
    body = json.dumps({"type": "url_verification", "token": "x", "challenge": "c-42"}).encode()
    answered = standing_slack.signed("/webhooks/slack", body, "application/json")
    assert answered.status_code == 200 and answered.json() == {"challenge": "c-42"}
    unsigned = standing_slack.signed(
        "/webhooks/slack", body, "application/json", secret="not-the-secret"
    )
    assert unsigned.status_code == 401


def test_wrong_signature_or_stale_timestamp_is_refused_and_nothing_delivered(
    standing_slack: Slack,
) -> None:
    slack = standing_slack
    thread = slack.announcement(f"*{STANDING}*").ts
    conversation = slack.standing_conversation()
    slack.work.wait_prompts(conversation, 1)  # the boot directive
    wrong = slack.reply("forged", thread, secret="someone-else")
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "unauthorized"
    stale = slack.reply("replayed", thread, timestamp=int(time.time()) - 301)
    assert stale.status_code == 401 and "stale" in stale.json()["error"]["message"]
    future = slack.reply("from the future", thread, timestamp=int(time.time()) + 400)
    assert future.status_code == 401
    press = slack.signed(
        "/webhooks/slack/interactions",
        b"payload=%7B%7D",
        "application/x-www-form-urlencoded",
        secret="someone-else",
    )
    assert press.status_code == 401
    assert inbox(slack) == []
    assert slack.work.events("slack.received") == []
    # a good one afterwards is delivered, so the refusals above were not a dead pipe
    assert slack.reply("genuine", thread).status_code == 200
    prompts = slack.work.wait_prompts(conversation, 2)
    assert "genuine" in prompts[-1] and not any("forged" in p or "replayed" in p for p in prompts)


def test_the_same_event_id_three_times_is_delivered_once(standing_slack: Slack) -> None:
    slack = standing_slack
    thread = slack.announcement(f"*{STANDING}*").ts
    conversation = slack.standing_conversation()
    slack.work.wait_prompts(conversation, 1)
    first = slack.reply("only once please", thread, event_id="Ev0SAME0001")
    assert first.status_code == 200 and first.json()["duplicate"] is False
    for retry in ("1", "2"):
        again = slack.reply(
            "only once please",
            thread,
            event_id="Ev0SAME0001",
            headers={"X-Slack-Retry-Num": retry, "X-Slack-Retry-Reason": "http_timeout"},
        )
        assert again.status_code == 200 and again.json()["duplicate"] is True
    slack.work.wait_prompts(conversation, 2)
    assert slack.reply("a later one", thread).status_code == 200
    prompts = slack.work.wait_prompts(conversation, 3)
    assert sum("only once please" in p for p in prompts) == 1, prompts
    assert "a later one" in prompts[-1]
    assert len(slack.work.events("webhook.duplicate")) == 2
    assert [r["status"] for r in inbox(slack) if r["deliveryId"] == "slack-Ev0SAME0001"] == [
        "succeeded"
    ]


def test_bad_input_is_a_clear_4xx(standing_slack: Slack) -> None:
    slack = standing_slack
    not_json = slack.signed("/webhooks/slack", b"{nope", "application/json")
    assert not_json.status_code == 400 and not_json.json()["error"]["code"] == "bad_input"
    no_id = json.dumps({"type": "event_callback", "event": {"type": "message"}}).encode()
    assert slack.signed("/webhooks/slack", no_id, "application/json").status_code == 400
    no_form = slack.signed("/webhooks/slack/interactions", b"{}", "application/json")
    assert no_form.status_code == 400
    big = b"x" * (1024 * 1024 + 1)
    assert slack.signed("/webhooks/slack", big, "application/json").status_code == 413
    wait_until(lambda: slack.work.events("webhook.rejected"), 30, what="rejections recorded")
    assert inbox(slack) == []
    assert CHANNEL and ALICE  # the fixture's channel and user stay the ones the tests name


def test_the_routes_are_404_while_slack_is_off(work: Work, fake_slack: FakeSlack) -> None:
    work.configure(slack={**slack_section(fake_slack), "enabled": False})
    daemon = start(work, fake_slack)
    try:
        slack = Slack(daemon, fake_slack)
        body = json.dumps({"type": "url_verification", "challenge": "c"}).encode()
        off = slack.signed("/webhooks/slack", body, "application/json")
        assert off.status_code == 404 and off.json()["error"]["code"] == "not_found"
        assert slack.press("p12345", "1.2").status_code == 404
    finally:
        daemon.stop()
