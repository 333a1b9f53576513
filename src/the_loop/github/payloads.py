"""Webhook payloads the-loop writes itself, in GitHub's documented shapes: what
``the-loop dispatch --comment TEXT --item OWNER/REPO#N --as LOGIN`` runs through the same path a
webhook takes (and the shape of ``docs/examples/comment.json``). Builds values only; no I/O."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from the_loop.errors import BadInput
from the_loop.refs import WorkItemRef

_MAX_COMMENT = 65_536
"""GitHub's own limit on a comment body."""


def _user(login: str) -> dict[str, Any]:
    return {"login": login, "id": 0, "type": "User", "html_url": f"https://github.com/{login}"}


def issue_comment(item: WorkItemRef, text: str, login: str) -> dict[str, Any]:
    """An ``issue_comment`` ``created`` payload: LOGIN commented TEXT on ITEM (an issue).
    Its comment id is fresh, so each call is a new comment. ``BadInput`` for a local item, a
    blank or oversized TEXT."""
    if item.is_local:
        raise BadInput(f"{item} has no tracker: use `the-loop sessions start {item}` instead")
    if not text.strip():
        raise BadInput("refusing to dispatch an empty comment")
    if len(text) > _MAX_COMMENT:
        raise BadInput(f"the comment is longer than GitHub's {_MAX_COMMENT} characters")
    web = f"https://{item.host}/{item.full_name}"
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    comment_id = secrets.randbelow(2**52) + 1
    return {
        "action": "created",
        "issue": {
            "number": item.number,
            "title": f"{item.full_name}#{item.number}",
            "html_url": f"{web}/issues/{item.number}",
            "state": "open",
            "body": "",
            "user": _user(login),
            "labels": [],
        },
        "comment": {
            "id": comment_id,
            "body": text,
            "user": _user(login),
            "html_url": f"{web}/issues/{item.number}#issuecomment-{comment_id}",
            "created_at": now,
            "updated_at": now,
        },
        "repository": {
            "name": item.repo,
            "full_name": item.full_name,
            "owner": _user(item.owner),
            "html_url": web,
        },
        "sender": _user(login),
    }
