"""The provider-neutral work event: what happened, who did it, and which work items it concerns.

Every inbound source (GitHub webhook, GitHub poller, later others) turns its activity into one
``WorkEvent``; the engine decides from it and prompts are rendered from it. A work event is a
plain immutable value with no behaviour beyond a few derived properties; building one does no
I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeAlias

from the_loop.errors import LoopError
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
    - ``source_id`` names the object a comment, review or review comment event authored, by
      the provider's id (``comment-<id>``, ``review-<id>``, ``review-comment-<id>``); ``None``
      for every other event. The same object under two delivery ids (a replayed delivery, a
      webhook and a poll) has the same ``source_id``. A Slack thread reply names its message
      (``slack-<channel>-<ts>``).
    - ``source`` is where the event came from: ``github`` (webhook or poller) or ``slack`` (a
      reply in a thread bound to a work item; ``actor`` is then ``slack:<user id>``). The
      engine's per-source rules (who is authorized, which event types are configured) key on
      it.
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
    source_id: str | None = None
    source: str = "github"

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
    def replay_key(self) -> str | None:
        """The key under which this event's authored object is remembered once processed
        (``<host>/<source_id>``), or None when the event authored no such object."""
        return None if self.source_id is None else f"{self.host}/{self.source_id}"

    @property
    def has_self_marker(self) -> bool:
        """True when the authored text carries the-loop's self-marker."""
        return has_self_marker(self.body)

    def to_json(self) -> str:
        """This event as JSON text (ASCII only), such that ``from_json`` gives an equal event
        back: every field, refs with their host, excerpt order and the exact type of each
        excerpt value, and any string (lone surrogates included)."""
        data: dict[str, object] = {
            "v": WORK_EVENT_FORMAT,
            **{name: getattr(self, name) for name in _SCALARS},
            "kind": self.kind.value,
            "items": [_ref_json(ref) for ref in self.items],
            "own": None if self.own is None else _ref_json(self.own),
            "labels": list(self.labels),
            "excerpt": dict(self.excerpt),
            "source_id": self.source_id,
            "source": self.source,
        }
        return json.dumps(data, ensure_ascii=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> WorkEvent:
        """The event ``to_json`` wrote. Raises ``ValueError`` naming the problem for text that
        is not such an event (malformed JSON, another format version, a field of the wrong
        type or a broken invariant); never anything else."""
        try:
            data = json.loads(text)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"a stored work event is not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("v") != WORK_EVENT_FORMAT:
            raise ValueError(f"not a work event of format {WORK_EVENT_FORMAT}")
        f = _Fields(data)
        try:
            kind = WorkKind(f.text("kind"))
        except ValueError:
            raise ValueError(f"a stored work event has a bad kind: {f.get('kind')!r}") from None
        own = f.get("own")
        return cls(
            kind=kind,
            event_name=f.text("event_name"),
            action=f.optional_text("action"),
            delivery_id=f.text("delivery_id"),
            actor=f.text("actor"),
            actor_is_bot=f.flag("actor_is_bot"),
            host=f.text("host"),
            repository=f.optional_text("repository"),
            items=tuple(_ref_of(ref) for ref in f.items("items")),
            own=None if own is None else _ref_of(own),
            own_is_pull_request=f.flag("own_is_pull_request"),
            body=f.optional_text("body"),
            url=f.optional_text("url"),
            title=f.optional_text("title"),
            item_url=f.optional_text("item_url"),
            item_body=f.optional_text("item_body"),
            item_closed=f.flag("item_closed"),
            merged=f.optional_flag("merged"),
            labels=tuple(_label_of(label) for label in f.items("labels")),
            label=f.optional_text("label"),
            conclusion=f.optional_text("conclusion"),
            excerpt=_excerpt_of(f.get("excerpt")),
            # absent from events stored before it existed
            source_id=f.optional_text("source_id") if "source_id" in data else None,
            source=f.text("source") if "source" in data else "github",
        )


WORK_EVENT_FORMAT = 1
"""The version of ``WorkEvent.to_json``'s format; ``from_json`` refuses any other."""

_OPTIONAL_TEXT = (
    "action",
    "repository",
    "body",
    "url",
    "title",
    "item_url",
    "item_body",
    "label",
    "conclusion",
)
_TEXT = ("event_name", "delivery_id", "actor", "host")
_FLAGS = ("actor_is_bot", "own_is_pull_request", "item_closed")
_SCALARS = (*_TEXT, *_OPTIONAL_TEXT, *_FLAGS, "merged")


class _Fields:
    """Typed reads of a decoded work event; every mismatch is a ``ValueError``."""

    def __init__(self, data: dict[str, object]) -> None:
        self.data = data

    def get(self, name: str) -> object:
        if name not in self.data:
            raise ValueError(f"a stored work event lacks {name!r}")
        return self.data[name]

    def text(self, name: str) -> str:
        value = self.get(name)
        if type(value) is not str:
            raise ValueError(f"a stored work event has a bad {name}: {value!r}")
        return value

    def optional_text(self, name: str) -> str | None:
        return None if self.get(name) is None else self.text(name)

    def flag(self, name: str) -> bool:
        value = self.get(name)
        if type(value) is not bool:
            raise ValueError(f"a stored work event has a bad {name}: {value!r}")
        return value

    def optional_flag(self, name: str) -> bool | None:
        return None if self.get(name) is None else self.flag(name)

    def items(self, name: str) -> list[object]:
        value = self.get(name)
        if not isinstance(value, list):
            raise ValueError(f"a stored work event has a bad {name}: {value!r}")
        return value


def _ref_json(ref: WorkItemRef) -> list[object]:
    return [ref.host, ref.owner, ref.repo, ref.number]


def _ref_of(value: object) -> WorkItemRef:
    if not isinstance(value, list) or len(value) != 4:
        raise ValueError(f"a stored work event has a bad item: {value!r}")
    host, owner, repo, number = value
    if not all(type(part) is str for part in (host, owner, repo)) or type(number) is not int:
        raise ValueError(f"a stored work event has a bad item: {value!r}")
    try:
        return WorkItemRef(str(owner), str(repo), number, str(host))
    except LoopError as exc:
        raise ValueError(f"a stored work event names a bad item: {exc}") from None


def _label_of(value: object) -> str:
    if type(value) is not str:
        raise ValueError(f"a stored work event has a bad label: {value!r}")
    return value


def _excerpt_of(value: object) -> dict[str, ExcerptValue]:
    if not isinstance(value, dict):
        raise ValueError(f"a stored work event has a bad excerpt: {value!r}")
    out: dict[str, ExcerptValue] = {}
    for key, item in value.items():
        if type(item) not in (str, int, bool):
            raise ValueError(f"a stored work event has a bad excerpt value: {item!r}")
        out[str(key)] = item
    return out


def has_self_marker(text: str | None) -> bool:
    """True when TEXT carries the self-marker (whitespace and case inside it are tolerated)."""
    return bool(text) and _SELF_MARKER_RE.search(text or "") is not None


def mark(text: str) -> str:
    """TEXT with the self-marker appended, unless it already carries one. Everything the-loop
    posts goes through this, so its own words never come back to it as work."""
    if has_self_marker(text):
        return text
    return f"{text.rstrip()}\n\n{SELF_MARKER}"
