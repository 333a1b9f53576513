"""``the-loop allow`` / ``the-loop deny`` in the routing rules (pure): who may answer, which
prompt a comment names, and that quoting a command does not repeat it."""

from __future__ import annotations

from typing import Any

from tests.fakes import payloads as p
from the_loop.config import Config
from the_loop.engine import (
    AnswerCommand,
    AnswerPermission,
    Ignore,
    LiveSession,
    RouteState,
    Unauthorized,
    answer_command,
    decide,
)
from the_loop.engine.keywords import permission_prompt_id
from the_loop.github.parse import parse_webhook
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent

ISSUE = WorkItemRef("octo", "repo", 15)
LIVE = RouteState(live={ISSUE: LiveSession("s-15")})
CONFIG = Config.model_validate({"routing": {"authorizedUsers": ["alice", "Bob"]}})


def comment(body: str, **kwargs: Any) -> WorkEvent:
    return parse_webhook("issue_comment", p.issue_comment_event(body, **kwargs), "d-1")


def test_an_authorized_allow_answers_the_live_session_naming_the_prompt() -> None:
    decision = decide(comment("the-loop allow `p3fa91` thanks"), LIVE, CONFIG)
    allow = AnswerCommand(allow=True, prompt_id="p3fa91")
    assert decision.actions == (AnswerPermission(ISSUE, "s-15", "alice", allow),)
    assert decision.acts
    bare = decide(comment("The-Loop DENY", sender="bob"), LIVE, CONFIG)
    deny = AnswerCommand(allow=False, prompt_id=None)
    assert bare.actions == (AnswerPermission(ISSUE, "s-15", "bob", deny),)


def test_unauthorized_no_session_and_quoted_commands_answer_nothing() -> None:
    stranger = decide(comment("the-loop allow p3fa91", sender="mallory"), LIVE, CONFIG)
    assert stranger.actions == (Unauthorized("mallory"),)
    nobody = decide(comment("the-loop allow"), RouteState(), CONFIG)
    assert isinstance(nobody.actions[0], Ignore)
    quoted = decide(comment("> the-loop allow p3fa91\n\nno, wait"), LIVE, CONFIG)
    assert not any(isinstance(a, AnswerPermission) for a in quoted.actions)
    both = decide(comment("the-loop allow and the-loop deny"), LIVE, CONFIG)
    assert isinstance(both.actions[0], Ignore)


def test_the_prompt_id_is_read_right_after_the_phrase() -> None:
    assert permission_prompt_id("the-loop allow p3fa91", "the-loop allow") == "p3fa91"
    assert permission_prompt_id("ok: the-loop  allow `P3FA91`.", "the-loop allow") == "p3fa91"
    assert permission_prompt_id("the-loop allow please", "the-loop allow") is None
    assert permission_prompt_id("the-loop allow p3fa91x", "the-loop allow") is None
    assert permission_prompt_id("```\nthe-loop allow p3fa91\n```", "the-loop allow") is None
    assert permission_prompt_id(None, "the-loop allow") is None


def test_an_answer_command_is_read_by_one_rule_wherever_it_is_written() -> None:
    """``answer_command``: the rule a comment's allow/deny/answer is read by, for texts that
    reach an agent without a work item (a standing session's Slack thread)."""
    assert answer_command("the-loop allow p3fa91", CONFIG) == AnswerCommand(True, "p3fa91")
    assert answer_command("The-Loop deny", CONFIG) == AnswerCommand(False, None)
    said = answer_command("the-loop answer p3fa91 use PostgreSQL\nthanks", CONFIG)
    assert said == AnswerCommand(False, "p3fa91", "use PostgreSQL")
    assert said.verb == "answer"
    for text in (
        "please allow it",  # no command
        "> the-loop allow p3fa91",  # quoted
        "`the-loop allow`",  # code
        "the-loop allow p3fa91 and the-loop deny",  # two commands: none is taken
        "the-loop pause",  # not an answer
        None,
    ):
        assert answer_command(text, CONFIG) is None, text
