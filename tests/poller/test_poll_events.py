"""The poller's work events, built from API objects, equal what the webhook-shaped payloads it
used to fake parsed into (the reference below is the poller's former payload builder)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from the_loop.github.api import Comment, Item, Review, ReviewComment
from the_loop.github.parse import parse_webhook
from the_loop.github.poll_events import (
    closed_event,
    comment_event,
    iso,
    labeled_event,
    review_comment_event,
    review_event,
)

HOST = "github.example.com"

# --- the reference: the webhook-shaped payloads the poller used to build ----------------------


def _user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "type": kind}


def _repository(repo: str) -> dict[str, Any]:
    owner, name = repo.split("/", 1)
    return {"full_name": repo, "name": name, "owner": {"login": owner}}


def _issue_json(item: Item) -> dict[str, Any]:
    data: dict[str, Any] = {
        "number": item.number,
        "title": item.title,
        "body": item.body,
        "state": item.state,
        "html_url": item.html_url,
        "user": _user(item.user.login, item.user.type),
        "labels": [{"name": n} for n in item.label_names],
        "updated_at": iso(item.updated_at),
        "author_association": item.author_association,
    }
    if item.is_pull:
        data["pull_request"] = {"merged_at": None}
    return data


def _pull_json(item: Item) -> dict[str, Any]:
    data = _issue_json(item)
    data.pop("pull_request", None)
    data.update({"merged": False, "head": {"ref": ""}})
    return data


def old_comment(repo: str, item: Item, comment: Comment) -> tuple[str, str, dict[str, Any]]:
    payload = {
        "action": "created",
        "issue": _issue_json(item),
        "comment": {
            "id": comment.id,
            "body": comment.body,
            "html_url": comment.html_url,
            "user": _user(comment.user.login, comment.user.type),
            "author_association": comment.author_association,
        },
        "repository": _repository(repo),
        "sender": _user(comment.user.login, comment.user.type),
    }
    return "issue_comment", f"poll-comment-{comment.id}", payload


def old_review(repo: str, item: Item, review: Review) -> tuple[str, str, dict[str, Any]]:
    payload = {
        "action": "submitted",
        "pull_request": _pull_json(item),
        "review": {
            "id": review.id,
            "body": review.body,
            "state": review.state,
            "html_url": review.html_url,
            "user": _user(review.user.login, review.user.type),
        },
        "repository": _repository(repo),
        "sender": _user(review.user.login, review.user.type),
    }
    return "pull_request_review", f"poll-review-{review.id}", payload


def old_review_comment(
    repo: str, item: Item, note: ReviewComment
) -> tuple[str, str, dict[str, Any]]:
    payload = {
        "action": "created",
        "pull_request": _pull_json(item),
        "comment": {
            "id": note.id,
            "body": note.body,
            "html_url": note.html_url,
            "path": note.path,
            "user": _user(note.user.login, note.user.type),
        },
        "repository": _repository(repo),
        "sender": _user(note.user.login, note.user.type),
    }
    return "pull_request_review_comment", f"poll-review-comment-{note.id}", payload


def old_labeled(repo: str, item: Item, label: str) -> tuple[str, str, dict[str, Any]]:
    payload: dict[str, Any] = {
        "action": "labeled",
        "label": {"name": label},
        "repository": _repository(repo),
        "sender": _user(item.user.login, item.user.type),
    }
    delivery = f"poll-labeled-{repo}-{item.number}-{iso(item.updated_at)}"
    if item.is_pull:
        payload.update(number=item.number, pull_request=_pull_json(item))
        return "pull_request", delivery, payload
    payload["issue"] = _issue_json(item)
    return "issues", delivery, payload


def old_closed(repo: str, item: Item, merged: bool) -> tuple[str, str, dict[str, Any]]:
    closed_at = iso(item.closed_at or item.updated_at)
    delivery = f"poll-close-{repo}-{item.number}-{closed_at}"
    sender = _user("the-loop-poller", "Bot")
    if item.is_pull:
        pull = {**_pull_json(item), "state": "closed", "merged": merged}
        payload = {
            "action": "closed",
            "number": item.number,
            "pull_request": pull,
            "repository": _repository(repo),
            "sender": sender,
        }
        return "pull_request", delivery, payload
    issue = {**_issue_json(item), "state": "closed"}
    payload = {
        "action": "closed",
        "issue": issue,
        "repository": _repository(repo),
        "sender": sender,
    }
    return "issues", delivery, payload


def parsed(old: tuple[str, str, dict[str, Any]]) -> Any:
    name, delivery, payload = old
    return parse_webhook(name, payload, delivery, HOST)


# --- strategies -------------------------------------------------------------------------------

LOGINS = st.sampled_from(["alice", "bob", "dependabot[bot]", "ghost", "the-loop-bot"])
KINDS = st.sampled_from(["User", "Bot", "Organization"])
TEXTS = st.text(max_size=80) | st.sampled_from(
    ["fixes #3", "Closes octo/repo#9 and resolves #4", "fix: #1", "the-loop start", "x" * 700]
)
STAMPS = st.datetimes(
    min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1), timezones=st.just(UTC)
)
REPOS = st.sampled_from(["octo/repo", "Octo-Org/app.js", "a/b"])
users = st.builds(lambda login, kind: {"login": login, "type": kind}, LOGINS, KINDS)


@st.composite
def items(draw: st.DrawFn) -> Item:
    number = draw(st.integers(1, 10_000))
    return Item.model_validate(
        {
            "number": number,
            "title": draw(TEXTS),
            "body": draw(st.none() | TEXTS),
            "state": draw(st.sampled_from(["open", "closed"])),
            "user": draw(st.none() | users),
            "labels": [{"name": n} for n in draw(st.lists(st.text(max_size=10), max_size=3))],
            "html_url": f"https://{HOST}/octo/repo/issues/{number}",
            "created_at": draw(STAMPS),
            "updated_at": draw(STAMPS),
            "closed_at": draw(st.none() | STAMPS),
            "author_association": draw(st.sampled_from(["OWNER", "NONE", "CONTRIBUTOR"])),
            "pull_request": draw(st.none() | st.just({"merged_at": None})),
            "comments": draw(st.integers(0, 50)),
        }
    )


def _note_fields(draw: st.DrawFn) -> dict[str, Any]:
    ident = draw(st.integers(1, 10**12))
    return {
        "id": ident,
        "body": draw(st.none() | TEXTS),
        "user": draw(st.none() | users),
        "html_url": draw(st.sampled_from([f"https://{HOST}/c/{ident}", ""])),
        "created_at": draw(STAMPS),
        "updated_at": draw(STAMPS),
        "author_association": draw(st.sampled_from(["OWNER", "NONE"])),
    }


@st.composite
def comments(draw: st.DrawFn) -> Comment:
    return Comment.model_validate({**_note_fields(draw), "issue_url": "https://x/issues/1"})


@st.composite
def reviews(draw: st.DrawFn) -> Review:
    fields = _note_fields(draw)
    fields.pop("created_at")
    fields.pop("updated_at")
    return Review.model_validate(
        {
            **fields,
            "state": draw(st.sampled_from(["APPROVED", "COMMENTED", "CHANGES_REQUESTED"])),
            "pull_request_url": "https://x/pulls/1",
            "submitted_at": draw(st.none() | STAMPS),
        }
    )


@st.composite
def review_comments(draw: st.DrawFn) -> ReviewComment:
    return ReviewComment.model_validate(
        {
            **_note_fields(draw),
            "pull_request_url": "https://x/pulls/1",
            "path": draw(st.sampled_from(["", "src/app.py"])),
        }
    )


pulls = items().map(lambda i: i.model_copy(update={"pull_request": {"merged_at": None}}))
PROPERTY = settings(max_examples=150, deadline=None)


@PROPERTY
@given(repo=REPOS, item=items(), comment=comments())
def test_a_comment_event_is_what_its_webhook_parsed_into(
    repo: str, item: Item, comment: Comment
) -> None:
    built = comment_event(repo, item, comment, HOST)
    assert built == parsed(old_comment(repo, item, comment))
    assert built.delivery_id == f"poll-comment-{comment.id}"


@PROPERTY
@given(repo=REPOS, pull=pulls, review=reviews())
def test_a_review_event_is_what_its_webhook_parsed_into(
    repo: str, pull: Item, review: Review
) -> None:
    built = review_event(repo, pull, review, HOST)
    assert built == parsed(old_review(repo, pull, review))
    assert list(built.excerpt) == list(parsed(old_review(repo, pull, review)).excerpt)


@PROPERTY
@given(repo=REPOS, pull=pulls, note=review_comments())
def test_a_review_comment_event_is_what_its_webhook_parsed_into(
    repo: str, pull: Item, note: ReviewComment
) -> None:
    assert review_comment_event(repo, pull, note, HOST) == parsed(
        old_review_comment(repo, pull, note)
    )


@PROPERTY
@given(repo=REPOS, item=items(), label=st.sampled_from(["the-loop", "Agent Work"]))
def test_a_label_event_is_what_its_webhook_parsed_into(repo: str, item: Item, label: str) -> None:
    built = labeled_event(repo, item, label, HOST)
    assert built == parsed(old_labeled(repo, item, label))
    assert list(built.excerpt) == list(parsed(old_labeled(repo, item, label)).excerpt)


@PROPERTY
@given(repo=REPOS, item=items(), merged=st.booleans())
def test_a_close_event_is_what_its_webhook_parsed_into(repo: str, item: Item, merged: bool) -> None:
    built = closed_event(repo, item, merged, HOST)
    assert built == parsed(old_closed(repo, item, merged))
    assert built.actor_is_bot and built.item_closed
