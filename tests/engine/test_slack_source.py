"""The engine's rules for a Slack thread reply (``WorkEvent.source`` ``slack``): authorized by
``slack.authorizedUsers``, not filtered by ``github.webhook.events``, keywords as on GitHub but
never arming, a refusal for a paused or missing session explained to the author, and a
replayed message or delivery decided like any other (docs/decisions/0070)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from the_loop.config import Config
from the_loop.engine import (
    AnswerCommand,
    AnswerPermission,
    Close,
    CloseReason,
    Deliver,
    Duplicate,
    Ignore,
    IgnoreReason,
    LiveSession,
    LiveStatus,
    Pause,
    PriorDelivery,
    Reply,
    Resume,
    RouteState,
    Unauthorized,
    decide,
    is_authorized,
)
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent, WorkKind

ITEM = WorkItemRef("octo", "repo", 15)
ACTIVE = LiveSession("s-15", requester="alice")
PAUSED = LiveSession("s-15", LiveStatus.PAUSED, "alice")


def config(**slack: Any) -> Config:
    return Config.model_validate(
        {
            "routing": {"authorizedUsers": ["alice"]},
            "slack": {"authorizedUsers": ["U0ALICE"], **slack},
            # Slack's events are not GitHub webhook types: this filter must not drop them
            "github": {"webhook": {"events": ["issues"]}},
        }
    )


CONFIG = config()


def reply(text: str, user: str = "U0ALICE", delivery: str = "slack-Ev1") -> WorkEvent:
    return WorkEvent(
        kind=WorkKind.COMMENT,
        event_name="slack.event",
        action=None,
        delivery_id=delivery,
        actor=f"slack:{user}",
        actor_is_bot=False,
        host=ITEM.host,
        repository=ITEM.full_name,
        items=(ITEM,),
        own=ITEM,
        body=text,
        source_id="slack-C1-1700000000.000200",
        source="slack",
    )


def live(session: LiveSession = ACTIVE, **kw: Any) -> RouteState:
    return RouteState({ITEM: session}, **kw)


def test_a_reply_by_an_authorized_slack_user_is_delivered() -> None:
    decision = decide(reply("use the retry helper"), live(), CONFIG)
    assert decision.actions == (Deliver(ITEM, "s-15"),)


def test_authorization_is_the_slack_list_not_the_github_one() -> None:
    stranger = decide(reply("let me in", user="U0MALLORY"), live(), CONFIG)
    assert stranger.actions == (Unauthorized("slack:U0MALLORY"),)
    assert "slack.authorizedUsers" in stranger.reasons[0]
    # a GitHub login that is authorized on GitHub is nobody on Slack, and the reverse
    assert not is_authorized("slack:alice", CONFIG, "slack")
    assert not is_authorized("U0ALICE", CONFIG, "github")
    assert is_authorized("slack:U0ALICE", CONFIG, "slack")
    # Slack ids are matched exactly, GitHub logins in any case
    assert not is_authorized("slack:u0alice", CONFIG, "slack")
    assert is_authorized("ALICE", CONFIG, "github")


def test_a_reply_to_a_paused_session_is_refused_and_the_author_told_why() -> None:
    decision = decide(reply("are you there?"), live(PAUSED), CONFIG)
    assert decision.actions[0] == Ignore(IgnoreReason.SESSION_PAUSED)
    told = decision.actions[1]
    assert isinstance(told, Reply) and told.item == ITEM and told.to == "slack:U0ALICE"
    assert "paused" in told.text and not decision.acts


def test_a_github_comment_on_a_paused_session_is_still_dropped_silently() -> None:
    github = replace(reply("are you there?"), source="github", actor="alice")
    assert decide(github, live(PAUSED), CONFIG).actions == (
        Ignore(IgnoreReason.EVENT_NOT_CONFIGURED),  # GitHub's types are filtered; Slack's not
    )
    github = replace(github, event_name="issues")
    decision = decide(github, live(PAUSED), CONFIG)
    assert decision.actions == (Ignore(IgnoreReason.SESSION_PAUSED),)


def test_keywords_act_like_the_same_comment_on_github() -> None:
    assert decide(reply("the-loop pause"), live(), CONFIG).actions == (Pause(ITEM, "s-15"),)
    resumed = decide(reply("the-loop resume"), live(PAUSED), CONFIG)
    assert resumed.actions == (Resume(ITEM, "s-15"),)
    stopped = decide(reply("the-loop stop"), live(), CONFIG)
    assert stopped.actions == (Close(ITEM, "s-15", CloseReason.STOPPED),)
    allowed = decide(reply("the-loop allow p3fa91"), live(), CONFIG)
    allow = AnswerCommand(allow=True, prompt_id="p3fa91")
    assert allowed.actions == (AnswerPermission(ITEM, "s-15", "slack:U0ALICE", allow),)
    conflict = decide(reply("the-loop pause and the-loop stop"), live(), CONFIG)
    assert conflict.actions[0] == Ignore(IgnoreReason.CONFLICTING_KEYWORDS)
    assert isinstance(conflict.actions[1], Reply)


def test_a_slack_reply_never_starts_a_session() -> None:
    decision = decide(reply("the-loop start"), RouteState(), CONFIG)
    assert decision.actions[0] == Ignore(IgnoreReason.NOT_ARMED)
    told = decision.actions[1]
    assert isinstance(told, Reply) and "no live session" in told.text


def test_a_retried_event_id_and_a_replayed_message_are_each_decided_once() -> None:
    again = decide(reply("hi"), live(prior=PriorDelivery.SUCCEEDED), CONFIG)
    assert again.actions == (Duplicate("slack-Ev1"),)
    replay = decide(reply("hi", delivery="slack-Ev2"), live(seen_by="slack-Ev1"), CONFIG)
    assert replay.actions == (Ignore(IgnoreReason.ALREADY_PROCESSED),)
    assert reply("hi").replay_key == "github.com/slack-C1-1700000000.000200"


def test_the_slack_source_survives_the_inbox() -> None:
    event = reply("hi")
    assert WorkEvent.from_json(event.to_json()) == event
    legacy = event.to_json().replace(',"source":"slack"', "")
    assert WorkEvent.from_json(legacy).source == "github"
