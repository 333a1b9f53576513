"""The engine's shared predicates (asked by the poller too) agree with ``decide`` itself."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes import payloads as p
from the_loop.config import Config
from the_loop.engine import (
    CommandScan,
    Keyword,
    RouteState,
    Spawn,
    arming_keyword,
    decide,
    is_authorized,
    is_start_request,
)
from the_loop.github.parse import parse_webhook

CONFIG = Config.model_validate({"routing": {"authorizedUsers": ["alice", "Bob"]}})
WORDS = st.sampled_from(
    [
        "the-loop start",
        "the-loop do fix it",
        "the-loop stop",
        "the-loop pause",
        "the-loop resume",
        "> the-loop start",
        "`the-loop start`",
        "please",
        "the-loop",
        "start",
        "\n",
    ]
)
bodies = st.lists(WORDS, max_size=4).map(" ".join)
actors = st.sampled_from(["alice", "ALICE", "bob", "mallory", ""])


def test_authorization_ignores_case_and_an_empty_list_authorizes_nobody() -> None:
    assert is_authorized("ALICE", CONFIG) and is_authorized("bob", CONFIG)
    assert not is_authorized("mallory", CONFIG) and not is_authorized("", CONFIG)
    assert not is_authorized("alice", Config.model_validate({}))


def test_only_a_single_start_or_do_arms() -> None:
    assert arming_keyword(CommandScan((Keyword.START,))) is Keyword.START
    assert arming_keyword(CommandScan((Keyword.DO,), "fix")) is Keyword.DO
    assert arming_keyword(CommandScan(())) is None
    assert arming_keyword(CommandScan((Keyword.STOP,))) is None
    assert arming_keyword(CommandScan((Keyword.START, Keyword.STOP))) is None


@settings(max_examples=300, deadline=None)
@given(body=bodies, actor=actors)
def test_a_start_request_is_exactly_a_comment_decide_spawns_for(body: str, actor: str) -> None:
    sender = p.user(actor) if actor else None
    payload = p.issue_comment_event(body, sender=actor or "x", sender_json=sender)
    event = parse_webhook("issue_comment", payload, "d-1")
    spawns = any(isinstance(a, Spawn) for a in decide(event, RouteState(), CONFIG).actions)
    assert is_start_request(body, event.actor, CONFIG) is spawns
