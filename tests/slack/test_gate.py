"""The delivery gate for a Slack reply: a reply in a work item's thread while its agent shows a
``[y/n]`` permission prompt (the fake agent takes the next line it reads as the answer) is held,
never answers the prompt, is told so in its thread, and reaches the agent once after the
allow."""

from __future__ import annotations

from typing import Any

from tests.attention.test_screen import ATTENTION, explain, state
from tests.fakes import fake_agent
from tests.fakes.fake_github import FakeGitHub
from tests.fakes.fake_slack import FakeSlack, Message
from tests.helpers import wait_until
from tests.slack.conftest import (
    STANDING,
    Slack,
    github_for_slack,
    slack_section,
    standing_served,
    start,
)
from tests.slack.test_work_items import spawn
from tests.work import Work


def _records(work: Work, sid: str, kind: str) -> list[dict[str, Any]]:
    return [r for r in fake_agent.read_records(work.agent_dir, sid) if r["kind"] == kind]


def told_waits(fake: FakeSlack, thread: Message) -> list[str]:
    """The posts in THREAD saying a reply waits behind a permission prompt, once there are."""
    return wait_until(
        lambda: [
            m.text
            for m in fake.thread(thread.channel, thread.ts)
            if "held behind a permission prompt" in m.text
        ],
        30,
        what="the thread told the reply waits",
    )


def test_a_slack_reply_waits_behind_the_prompt(
    work: Work, fake_slack: FakeSlack, gh: FakeGitHub
) -> None:
    work.configure(
        slack=slack_section(fake_slack, workItems=True),
        github=github_for_slack(gh),
        attention=ATTENTION,  # the fake agent's [y/n] prompt, read from the screen
    )
    daemon = start(work, fake_slack, gh)
    try:
        slack = Slack(daemon, fake_slack)
        ref, _, sid = spawn(slack, gh)
        announced = slack.announcement(ref)
        work.wait_prompts(sid, 1)
        asked = work.cli("sessions", "say", ref, "--text", "ASK-PERMISSION: make deploy")
        assert asked.exit_code == 0, asked.stderr
        wait_until(lambda: state(work, ref) == "needs-permission", 30, what="the prompt")
        prompt = explain(work, ref)["prompt"]

        assert slack.reply("HELD-SLACK use the retry helper", announced.ts).status_code == 200
        wait_until(lambda: work.events("session.held"), 30, what="the held reply")
        told = told_waits(fake_slack, announced)  # its writer hears why, and until when
        assert len(told) == 1 and prompt["id"] in told[0], told
        assert "delivered once it is answered" in told[0], told
        assert _records(work, sid, "answer") == []
        assert explain(work, ref)["prompt"]["id"] == prompt["id"]

        allowed = work.cli("sessions", "allow", ref, "--prompt", prompt["id"])
        assert allowed.exit_code == 0, allowed.stderr
        wait_until(
            lambda: [p for p in _records(work, sid, "prompt") if "HELD-SLACK" in p["text"]],
            30,
            what="the held reply delivered",
        )
        answers = [(a["command"], a["answer"]) for a in _records(work, sid, "answer")]
        assert answers == [("make deploy", "y")]
        assert sum("HELD-SLACK" in p["text"] for p in _records(work, sid, "prompt")) == 1
    finally:
        daemon.stop()


def test_a_reply_to_a_standing_session_that_waits_is_told_so_in_its_thread(
    work: Work, fake_slack: FakeSlack
) -> None:
    """The same for a standing session: its thread hears why the reply waits."""
    with standing_served(work, fake_slack, attention=ATTENTION) as slack:
        announced = slack.announcement(f"*{STANDING}*")
        conversation = slack.standing_conversation()
        work.wait_prompts(conversation, 1)
        asked = work.cli("standing", "say", STANDING, "--text", "ASK-PERMISSION: make deploy")
        assert asked.exit_code == 0, asked.stderr
        key = f"standing:{STANDING}"
        wait_until(lambda: state(work, key) == "needs-permission", 30, what="the prompt")
        assert slack.reply("HELD-STANDING later please", announced.ts).status_code == 200
        told = told_waits(fake_slack, announced)
        assert len(told) == 1 and f"in {STANDING}; delivered once it is answered" in told[0]
        assert not any("HELD-STANDING" in p for p in work.prompts(conversation))
