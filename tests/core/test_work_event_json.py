"""``WorkEvent.to_json`` / ``from_json``: lossless, and a clear ``ValueError`` for anything else."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.fakes import payloads as p
from the_loop.github.parse import parse_webhook
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent, WorkKind

# any code point, lone surrogates included: a webhook body may carry "\ud800" escapes
ANY_TEXT = st.text(st.characters(codec=None, categories=None), max_size=30)
OPT_TEXT = st.none() | ANY_TEXT
refs = st.builds(
    WorkItemRef,
    owner=st.sampled_from(["octo", "Octo-Org", "a1"]),
    repo=st.sampled_from(["repo", "app.js", "x_y"]),
    number=st.integers(1, 2**40),
    host=st.sampled_from(["github.com", "ghe.example.com", "127.0.0.1:8080", "GHE.Example.com"]),
)
excerpt_values = ANY_TEXT | st.integers(-(2**70), 2**70) | st.booleans()


@st.composite
def work_events(draw: st.DrawFn) -> WorkEvent:
    items = tuple(draw(st.lists(refs, unique=True, max_size=4)))
    own = draw(st.sampled_from(items)) if items and draw(st.booleans()) else None
    return WorkEvent(
        kind=draw(st.sampled_from(WorkKind)),
        event_name=draw(ANY_TEXT),
        action=draw(OPT_TEXT),
        delivery_id=draw(ANY_TEXT),
        actor=draw(ANY_TEXT),
        actor_is_bot=draw(st.booleans()),
        host=draw(ANY_TEXT),
        repository=draw(OPT_TEXT),
        items=items,
        own=own,
        own_is_pull_request=draw(st.booleans()),
        body=draw(OPT_TEXT),
        url=draw(OPT_TEXT),
        title=draw(OPT_TEXT),
        item_url=draw(OPT_TEXT),
        item_body=draw(OPT_TEXT),
        item_closed=draw(st.booleans()),
        merged=draw(st.none() | st.booleans()),
        labels=tuple(draw(st.lists(ANY_TEXT, max_size=3))),
        label=draw(OPT_TEXT),
        conclusion=draw(OPT_TEXT),
        excerpt=draw(st.dictionaries(ANY_TEXT, excerpt_values, max_size=5)),
    )


@settings(max_examples=400, deadline=None)
@given(event=work_events())
def test_round_trip_is_lossless(event: WorkEvent) -> None:
    text = event.to_json()
    assert text.isascii()
    back = WorkEvent.from_json(text)
    assert back == event
    assert list(back.excerpt.items()) == list(event.excerpt.items())
    assert [type(v) for v in back.excerpt.values()] == [type(v) for v in event.excerpt.values()]
    assert [r.host for r in back.items] == [r.host for r in event.items]
    assert WorkEvent.from_json(text.encode()) == event


def test_a_parsed_webhook_round_trips() -> None:
    event = parse_webhook(
        "issue_comment", p.issue_comment_event("the-loop do fix it \ud83d"), "d-1", "github.com"
    )
    assert WorkEvent.from_json(event.to_json()) == event


def _mutated(**changes: object) -> str:
    event = parse_webhook("issues", p.issues_event("opened"), "d-2", "github.com")
    data = json.loads(event.to_json())
    data.update(changes)
    return json.dumps(data)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "{nope",
        "[]",
        '{"v": 2}',
        _mutated(kind="exploded"),
        _mutated(actor_is_bot=1),
        _mutated(merged="yes"),
        _mutated(items=[["github.com", "octo", "repo", 0]]),
        _mutated(items=[["github.com", "octo", "repo", True]]),
        _mutated(items="octo/repo#1"),
        _mutated(own=["github.com", "octo", "other", 3]),
        _mutated(excerpt={"a": [1]}),
        _mutated(labels=[1]),
        _mutated(body=5),
    ],
)
def test_anything_else_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError) as raised:
        WorkEvent.from_json(text)
    assert str(raised.value)


def test_a_missing_field_is_named() -> None:
    data = json.loads(_mutated())
    del data["actor"]
    with pytest.raises(ValueError, match="actor"):
        WorkEvent.from_json(json.dumps(data))
