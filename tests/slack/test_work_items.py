"""Work items with ``slack.workItems``: each spawn is announced in ``slack.channel`` (links to
the issue and the dashboard), a thread reply by an authorized user reaches the work item's
agent and is mirrored as a marked comment on the fake GitHub, which — when GitHub sends it
back as a webhook — is not delivered to the agent again."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.fakes.fake_github import FakeGitHub
from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.outbox.conftest import HOST, REPO, asked, start_payload
from tests.slack.conftest import (
    ALICE,
    CHANNEL,
    MALLORY,
    Slack,
    github_for_slack,
    slack_section,
    start,
)
from tests.work import Work

ATTENTION = {"quietSeconds": 1, "pollSeconds": 0.1, "notifyAfterSeconds": 0}


def items_daemon(work: Work, fake: FakeSlack, gh: FakeGitHub, **slack: Any) -> Daemon:
    work.configure(
        slack=slack_section(fake, workItems=True, **slack),
        github=github_for_slack(gh),
        attention=ATTENTION,
    )
    return start(work, fake, gh)


@pytest.fixture
def items_slack(work: Work, fake_slack: FakeSlack, gh: FakeGitHub) -> Iterator[Slack]:
    daemon = items_daemon(work, fake_slack, gh)
    try:
        yield Slack(daemon, fake_slack)
    finally:
        daemon.stop()


def spawn(slack: Slack, gh: FakeGitHub) -> tuple[str, int, str]:
    """Start work on a new issue; (ref, number, session id) once the session is active."""
    item = asked(gh, delivery=f"d-{len(gh.comments(REPO, 1))}")
    assert (
        slack.daemon.post("issue_comment", start_payload(item), f"start-{item.number}").status_code
        == 202
    )
    ref = f"github:{HOST}/{REPO}#{item.number}"
    wait_until(lambda: slack.work.cli("sessions", "show", ref).exit_code == 0, 30, what="spawned")
    return ref, item.number, slack.work.session_json(ref)["id"]


def test_spawn_announced_reply_delivered_and_mirrored_never_back(
    items_slack: Slack, gh: FakeGitHub
) -> None:
    slack = items_slack
    ref, number, sid = spawn(slack, gh)
    announced = slack.announcement(ref)
    assert f"https://{HOST}/{REPO}/issues/{number}" in announced.text
    assert f"{slack.daemon.url}/sessions/{sid}" in announced.text  # no publicUrl: the daemon's
    slack.work.wait_prompts(sid, 1)

    assert slack.reply("use the retry helper", announced.ts).status_code == 200
    prompts = slack.work.wait_prompts(sid, 2)
    assert prompts[-1].startswith(f"Message from slack:{ALICE} (operator) about {ref}")
    assert "use the retry helper" in prompts[-1]

    def mirrored() -> list[dict[str, Any]]:
        return [c for c in gh.comments(REPO, number) if "use the retry helper" in c["body"]]

    comment = wait_until(mirrored, 30, what="the mirrored comment")[0]  # type: ignore[index]
    assert "<!-- the-loop -->" in comment["body"] and f"slack:{ALICE}" in comment["body"]
    # GitHub sends the mirrored comment back as a webhook, even from an authorized login
    back = P.issue_comment_event(comment["body"], number=number, repo=REPO, sender="alice")
    back["comment"]["id"] = comment["id"]
    assert slack.daemon.post("issue_comment", back, f"mirror-{number}").status_code == 202
    wait_until(
        lambda: any(
            e["deliveryId"] == f"mirror-{number}" for e in slack.work.events("route.ignored")
        ),
        30,
        what="the mirror ignored",
    )
    assert len(slack.work.prompts(sid)) == 2
    top = [m for m in slack.fake.posts(CHANNEL) if m.thread_ts is None]
    assert len(top) == 1


def test_mirroring_can_be_switched_off(work: Work, fake_slack: FakeSlack, gh: FakeGitHub) -> None:
    daemon = items_daemon(work, fake_slack, gh, mirrorToGitHub=False)
    try:
        slack = Slack(daemon, fake_slack)
        ref, number, sid = spawn(slack, gh)
        announced = slack.announcement(ref)
        slack.work.wait_prompts(sid, 1)
        assert slack.reply("not on the ticket", announced.ts).status_code == 200
        slack.work.wait_prompts(sid, 2)
        wait_until(
            lambda: any(
                "delivered" in str(e["payload"].get("summary"))
                for e in work.events("dispatch.succeeded")
                if str(e["deliveryId"]).startswith("slack-")
            ),
            30,
            what="the Slack delivery recorded",
        )
        assert not [c for c in gh.comments(REPO, number) if "not on the ticket" in c["body"]]
    finally:
        daemon.stop()


def test_pause_from_slack_then_a_reply_is_refused_in_the_thread(
    items_slack: Slack, gh: FakeGitHub
) -> None:
    """``the-loop pause`` in the item's thread pauses it like the same comment on GitHub; a
    reply to the paused session is not delivered, and its author is told why in the thread;
    ``the-loop resume`` lifts the pause and the next reply is delivered."""
    slack = items_slack
    ref, _, sid = spawn(slack, gh)
    thread = slack.announcement(ref).ts
    slack.work.wait_prompts(sid, 1)

    assert slack.reply("the-loop pause", thread).status_code == 200
    wait_until(lambda: slack.work.session_json(ref)["status"] == "paused", 30, what="paused")
    assert slack.reply("are you still there?", thread).status_code == 200

    def told() -> list[Any]:
        return [m for m in slack.fake.thread(CHANNEL, thread) if "paused" in m.text]

    notice = wait_until(told, 30, what="the paused notice in the thread")[0]  # type: ignore[index]
    assert f"<@{ALICE}>" in notice.text and "the-loop resume" in notice.text
    assert slack.dropped("session-paused")["payload"]["user"] == ALICE
    assert len(slack.work.prompts(sid)) == 1  # neither the keyword nor the reply was delivered

    assert slack.reply("the-loop resume", thread).status_code == 200
    wait_until(lambda: slack.work.session_json(ref)["status"] == "active", 30, what="resumed")
    assert slack.reply("now carry on", thread).status_code == 200
    prompts = slack.work.wait_prompts(sid, 2)
    assert "now carry on" in prompts[-1] and "are you still there" not in "".join(prompts)


def test_a_stranger_is_refused_and_a_stale_allow_is_explained_in_the_thread(
    items_slack: Slack, gh: FakeGitHub
) -> None:
    """In a work item's thread the engine decides who may talk (``slack.authorizedUsers``) and
    reads ``the-loop allow`` as the same comment on GitHub would be read: with nothing pending
    it changes nothing, and the refusal is told in the thread, not on the issue."""
    slack = items_slack
    ref, number, sid = spawn(slack, gh)
    thread = slack.announcement(ref).ts
    slack.work.wait_prompts(sid, 1)

    assert slack.reply("let me in", thread, user=MALLORY).status_code == 200
    assert slack.dropped("unauthorized")["payload"]["user"] == MALLORY
    assert any(e["payload"]["actor"] == f"slack:{MALLORY}" for e in work_events(slack))

    assert slack.reply("the-loop allow", thread).status_code == 200

    def refused() -> list[Any]:
        return [m for m in slack.fake.thread(CHANNEL, thread) if "pending" in m.text]

    notice = wait_until(refused, 30, what="the refusal in the thread")[0]  # type: ignore[index]
    assert notice.text.startswith(f"<@{ALICE}> ")
    assert len(slack.work.prompts(sid)) == 1
    assert not [c for c in gh.comments(REPO, number) if "pending" in c["body"]]


def work_events(slack: Slack) -> list[dict[str, Any]]:
    return slack.work.events("route.unauthorized")
