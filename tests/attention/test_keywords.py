"""``the-loop allow`` / ``the-loop deny`` in the routing rules (pure): who may answer, which
prompt a comment names, and that quoting a command does not repeat it."""

from __future__ import annotations

from typing import Any

from tests.fakes import payloads as p
from the_loop.config import Config
from the_loop.engine import AnswerPermission, Ignore, LiveSession, RouteState, Unauthorized, decide
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
    assert decision.actions == (AnswerPermission(ISSUE, "s-15", True, "alice", "p3fa91"),)
    assert decision.acts
    bare = decide(comment("The-Loop DENY", sender="bob"), LIVE, CONFIG)
    assert bare.actions == (AnswerPermission(ISSUE, "s-15", False, "bob", None),)


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
