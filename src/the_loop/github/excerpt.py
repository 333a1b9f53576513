"""Allow-listed excerpts of a delivery for prompts: which fields of which event type, and how
much of them. Pure: no I/O. An excerpt is untrusted input and is framed as such by prompts."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TypeAlias, TypeGuard

from the_loop.work import ExcerptValue

Payload: TypeAlias = Mapping[str, object]

_SCALAR_TYPES = (str, int, bool)
EXCERPT_STRING_LIMIT = 500
EXCERPT_TOTAL_LIMIT = 4000

EXCERPTS: dict[str, tuple[str, ...]] = {
    "issues": (
        "issue.number",
        "issue.title",
        "issue.state",
        "issue.state_reason",
        "issue.user.login",
        "label.name",
    ),
    "issue_comment": (
        "issue.number",
        "issue.title",
        "issue.state",
        "comment.id",
        "comment.user.login",
        "comment.author_association",
        "comment.html_url",
    ),
    "pull_request": (
        "pull_request.number",
        "pull_request.title",
        "pull_request.state",
        "pull_request.draft",
        "pull_request.merged",
        "pull_request.head.ref",
        "pull_request.base.ref",
        "pull_request.user.login",
        "label.name",
    ),
    "pull_request_review": (
        "pull_request.number",
        "pull_request.title",
        "pull_request.head.ref",
        "review.state",
        "review.user.login",
        "review.html_url",
    ),
    "pull_request_review_comment": (
        "pull_request.number",
        "pull_request.title",
        "pull_request.head.ref",
        "comment.path",
        "comment.line",
        "comment.side",
        "comment.in_reply_to_id",
        "comment.user.login",
        "comment.html_url",
        "comment.diff_hunk",
    ),
    "workflow_run": (
        "workflow_run.name",
        "workflow_run.event",
        "workflow_run.status",
        "workflow_run.conclusion",
        "workflow_run.head_branch",
        "workflow_run.head_sha",
        "workflow_run.run_attempt",
        "workflow_run.html_url",
    ),
    "check_run": (
        "check_run.name",
        "check_run.status",
        "check_run.conclusion",
        "check_run.head_sha",
        "check_run.html_url",
        "check_run.output.title",
        "check_run.output.summary",
    ),
    "check_suite": (
        "check_suite.app.name",
        "check_suite.status",
        "check_suite.conclusion",
        "check_suite.head_branch",
        "check_suite.head_sha",
    ),
    "status": ("context", "state", "description", "sha", "target_url"),
}
"""The allow-listed payload fields of each event type, by dotted path, in prompt order."""


def payload_excerpt(payload: Payload, paths: Iterable[str]) -> dict[str, ExcerptValue]:
    """The scalar values at the dotted PATHS of PAYLOAD (missing ones left out), clipped as
    ``clip_excerpt`` does."""
    return clip_excerpt((path, _dig(payload, path)) for path in paths)


def clip_excerpt(values: Iterable[tuple[str, object]]) -> dict[str, ExcerptValue]:
    """The scalar (str, int, bool) VALUES by path, in order, others left out: each string
    clipped to ``EXCERPT_STRING_LIMIT`` characters and all strings together to
    ``EXCERPT_TOTAL_LIMIT`` (once the budget is spent, further strings are left out)."""
    out: dict[str, ExcerptValue] = {}
    budget = EXCERPT_TOTAL_LIMIT
    for path, value in values:
        if isinstance(value, str):
            if budget <= 0:
                continue
            value = _clip(value, min(EXCERPT_STRING_LIMIT, budget))
            budget -= len(value)
        if isinstance(value, _SCALAR_TYPES):
            out[path] = value
    return out


def is_mapping(value: object) -> TypeGuard[Mapping[str, object]]:
    """``isinstance(VALUE, Mapping)``, with the common case (a decoded JSON object, a ``dict``)
    answered without the ABC check, which dominates a parse's cost otherwise."""
    return type(value) is dict or isinstance(value, Mapping)


def _dig(payload: Payload, path: str) -> object:
    node: object = payload
    for part in _parts(path):
        if type(node) is not dict and not isinstance(node, Mapping):
            return None
        node = node.get(part)
    return node


@functools.lru_cache(maxsize=256)
def _parts(path: str) -> tuple[str, ...]:
    return tuple(path.split("."))


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
