"""The poller's work events, built directly from GitHub's API objects. Pure: no I/O.

Each function returns the ``WorkEvent`` that the corresponding webhook delivery would have
parsed into (``github.parse``), as far as the REST objects show it: the same kind, event type
and action, items (linked issues of a pull request first), actor, texts and links, and the
same allow-listed excerpt fields (``github.excerpt``) where the API objects carry them. What
the listings do not carry is absent, exactly as it was when the poller built webhook-shaped
payloads: a pull request's head branch (so no branch link), its draft flag and base branch, a
diff comment's line, side and hunk.

Delivery ids are synthetic and stable, so the inbox dedupes a poll that sees the same activity
twice: ``poll-comment-<id>``, ``poll-review-<id>``, ``poll-review-comment-<id>``,
``poll-labeled-<repo>-<n>-<updated>`` and ``poll-close-<repo>-<n>-<closed>``. A comment,
review or review comment carries the same ``source_id`` its webhook delivery would, so the one
object seen by both is processed once (``WorkEvent.replay_key``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from the_loop.github.excerpt import EXCERPTS, clip_excerpt
from the_loop.github.links import linked_issues
from the_loop.github.models import Comment, Item, Review, ReviewComment, User
from the_loop.github.parse import is_bot
from the_loop.refs import WorkItemRef, validate_owner_repo
from the_loop.work import WorkEvent, WorkKind

POLLER_LOGIN = "the-loop-poller"
"""The actor of a close the poller detected (GitHub's listings do not say who closed)."""


def iso(value: datetime) -> str:
    """VALUE as GitHub writes timestamps (UTC, whole seconds, ``Z``)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def comment_event(repo: str, item: Item, comment: Comment, host: str) -> WorkEvent:
    """A new conversation COMMENT on ITEM (``issue_comment`` ``created``)."""
    fields = {
        **_issue_fields(item, item.state),
        "comment.id": comment.id,
        "comment.user.login": comment.user.login,
        "comment.author_association": comment.author_association,
        "comment.html_url": comment.html_url,
    }
    return _event(
        repo,
        item,
        host,
        kind=WorkKind.COMMENT,
        name="issue_comment",
        action="created",
        delivery=f"poll-comment-{comment.id}",
        source_id=f"comment-{comment.id}",
        actor=comment.user,
        body=comment.body,
        url=comment.html_url,
        fields=fields,
    )


def review_event(repo: str, pull: Item, review: Review, host: str) -> WorkEvent:
    """A submitted REVIEW of pull request PULL (``pull_request_review`` ``submitted``)."""
    fields = {
        **_pull_fields(pull, pull.state, merged=False),
        "review.state": review.state,
        "review.user.login": review.user.login,
        "review.html_url": review.html_url,
    }
    return _event(
        repo,
        pull,
        host,
        kind=WorkKind.REVIEW,
        name="pull_request_review",
        action="submitted",
        delivery=f"poll-review-{review.id}",
        source_id=f"review-{review.id}",
        actor=review.user,
        body=review.body,
        url=review.html_url,
        fields=fields,
    )


def review_comment_event(repo: str, pull: Item, note: ReviewComment, host: str) -> WorkEvent:
    """A new diff comment NOTE on pull request PULL (``pull_request_review_comment``
    ``created``)."""
    fields = {
        **_pull_fields(pull, pull.state, merged=False),
        "comment.path": note.path,
        "comment.user.login": note.user.login,
        "comment.html_url": note.html_url,
    }
    return _event(
        repo,
        pull,
        host,
        kind=WorkKind.REVIEW_COMMENT,
        name="pull_request_review_comment",
        action="created",
        delivery=f"poll-review-comment-{note.id}",
        source_id=f"review-comment-{note.id}",
        actor=note.user,
        body=note.body,
        url=note.html_url,
        fields=fields,
    )


def labeled_event(repo: str, item: Item, label: str, host: str) -> WorkEvent:
    """ITEM as if just labelled LABEL by its author: how a first sight arms an item by label
    (SPEC §6 rule 5) when no start command is required."""
    if item.is_pull:
        fields = _pull_fields(item, item.state, merged=False)
    else:
        fields = _issue_fields(item, item.state)
    return _event(
        repo,
        item,
        host,
        kind=WorkKind.LABELED,
        name="pull_request" if item.is_pull else "issues",
        action="labeled",
        delivery=f"poll-labeled-{repo}-{item.number}-{iso(item.updated_at)}",
        actor=item.user,
        fields={**fields, "label.name": label},
        label=label,
    )


def closed_event(repo: str, item: Item, merged: bool, host: str) -> WorkEvent:
    """ITEM found closed (MERGED, for a pull request), by the poller as actor."""
    if item.is_pull:
        fields = _pull_fields(item, "closed", merged=merged)
    else:
        fields = _issue_fields(item, "closed")
    closed_at = iso(item.closed_at or item.updated_at)
    return _event(
        repo,
        item,
        host,
        kind=WorkKind.CLOSED,
        name="pull_request" if item.is_pull else "issues",
        action="closed",
        delivery=f"poll-close-{repo}-{item.number}-{closed_at}",
        actor=User(login=POLLER_LOGIN, type="Bot"),
        fields=fields,
        closed=True,
        merged=merged if item.is_pull else None,
    )


def _issue_fields(item: Item, state: str) -> dict[str, object]:
    return {
        "issue.number": item.number,
        "issue.title": item.title,
        "issue.state": state,
        "issue.user.login": item.user.login,
    }


def _pull_fields(item: Item, state: str, *, merged: bool) -> dict[str, object]:
    return {
        "pull_request.number": item.number,
        "pull_request.title": item.title,
        "pull_request.state": state,
        "pull_request.merged": merged,
        "pull_request.head.ref": "",
        "pull_request.user.login": item.user.login,
    }


def _event(
    repo: str,
    item: Item,
    host: str,
    *,
    kind: WorkKind,
    name: str,
    action: str,
    delivery: str,
    actor: User,
    fields: Mapping[str, object],
    body: str | None = None,
    url: str | None = None,
    label: str | None = None,
    closed: bool | None = None,
    merged: bool | None = None,
    source_id: str | None = None,
) -> WorkEvent:
    """The event about ITEM of REPO: its linked issues (closing keywords in its body) first,
    then ITEM itself; the excerpt is FIELDS in the order and under the limits of
    ``EXCERPTS[NAME]``."""
    owner, name_of_repo = validate_owner_repo(repo)
    ref = WorkItemRef(owner, name_of_repo, item.number, host.lower())
    links = linked_issues(ref, item.body, None) if item.is_pull else ()
    return WorkEvent(
        kind=kind,
        event_name=name,
        action=action,
        delivery_id=delivery,
        actor=actor.login,
        actor_is_bot=is_bot(actor.login, actor.type),
        host=ref.host,
        repository=ref.full_name,
        items=(*links, ref),
        own=ref,
        own_is_pull_request=item.is_pull,
        body=body,
        url=url or item.html_url,
        title=item.title,
        item_url=item.html_url,
        item_body=item.body,
        item_closed=item.state == "closed" if closed is None else closed,
        merged=merged,
        labels=tuple(item.label_names),
        label=label,
        excerpt=clip_excerpt((path, fields.get(path)) for path in EXCERPTS[name]),
        source_id=source_id,
    )
