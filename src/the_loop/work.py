"""The provider-neutral work event: what happened, who did it, and which work items it concerns.

Every inbound source (GitHub webhook, GitHub poller, later others) turns its activity into one
``WorkEvent``; the engine decides from it and prompts are rendered from it. A work event is a
plain immutable value with no behaviour beyond a few derived properties; building one does no
I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from the_loop.refs import WorkItemRef

SELF_MARKER = "<!-- the-loop -->"
"""Put on everything the-loop posts (and which agents are told to put on theirs)."""

_SELF_MARKER_RE = re.compile(r"<!--\s*the-loop\s*-->", re.IGNORECASE)

ExcerptValue: TypeAlias = str | int | bool
"""A scalar taken from an allow-listed payload field (strings already size-limited)."""


class WorkKind(StrEnum):
    """What happened. ``other`` is a known event type with an action nothing routes (an edit, a
    synchronize, an unlabel); ``unsupported`` is an event type that cannot name a work item
    (``ping``, ``push``, anything unknown)."""

    OPENED = "opened"
    COMMENT = "comment"
    REVIEW = "review"
    REVIEW_COMMENT = "review_comment"
    LABELED = "labeled"
    CLOSED = "closed"
    REOPENED = "reopened"
    CI = "ci"
    OTHER = "other"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True, slots=True)
class WorkEvent:
    """One inbound activity, provider-neutral.

    Contract:
    - ``items`` is ordered and free of duplicates: for a pull request the issues it closes come
      first (closing references, closing keywords in its body, its head branch), then the pull
      request itself. For a CI event: per pull request, its branch-linked issue then the pull
      request. ``items`` is empty only for ``unsupported`` events and CI runs that concern no
      pull request or issue branch.
    - ``own`` is the item the event is directly about (the issue or pull request commented on,
      closed, labelled, ...); it is ``None`` exactly when no item is named, else it is in
      ``items``.
    - ``body`` is the text this event authored (a comment, a review, the description of an
      item just opened); ``None`` when the event authored none (a close, a label, CI).
    - ``title``, ``item_url``, ``item_body``, ``item_closed`` describe ``own`` as the payload
      showed it; ``url`` links to the event itself (the comment, the review, the run).
    - ``merged`` is set only for a pull request close; ``conclusion`` only for CI events, and
      only once the run completed (commit status ``error`` reads as ``failure``).
    - ``excerpt`` holds allow-listed payload fields (dotted paths) for prompts, size-limited;
      it is untrusted input and must be framed as such.
    """

    kind: WorkKind
    event_name: str
    action: str | None
    delivery_id: str
    actor: str
    actor_is_bot: bool
    host: str
    repository: str | None
    items: tuple[WorkItemRef, ...]
    own: WorkItemRef | None
    own_is_pull_request: bool = False
    body: str | None = None
    url: str | None = None
    title: str | None = None
    item_url: str | None = None
    item_body: str | None = None
    item_closed: bool = False
    merged: bool | None = None
    labels: tuple[str, ...] = ()
    label: str | None = None
    conclusion: str | None = None
    excerpt: Mapping[str, ExcerptValue] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.own is not None and self.own not in self.items:
            raise ValueError(f"own item {self.own} is not among the event's items")
        if len(set(self.items)) != len(self.items):
            raise ValueError("a work event's items must not repeat")

    @property
    def linked(self) -> tuple[WorkItemRef, ...]:
        """The items this event reaches only through a link (every item but ``own``)."""
        return tuple(item for item in self.items if item != self.own)

    @property
    def has_self_marker(self) -> bool:
        """True when the authored text carries the-loop's self-marker."""
        return has_self_marker(self.body)


def has_self_marker(text: str | None) -> bool:
    """True when TEXT carries the self-marker (whitespace and case inside it are tolerated)."""
    return bool(text) and _SELF_MARKER_RE.search(text or "") is not None


def mark(text: str) -> str:
    """TEXT with the self-marker appended, unless it already carries one. Everything the-loop
    posts goes through this, so its own words never come back to it as work."""
    if has_self_marker(text):
        return text
    return f"{text.rstrip()}\n\n{SELF_MARKER}"
