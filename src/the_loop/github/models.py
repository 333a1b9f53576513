"""GitHub's REST objects as the-loop reads them: only the fields it uses, validated once.

Unknown fields are ignored; a deleted account (``user: null``) reads as ``ghost``; a null body
reads as ``""``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Annotated, Generic, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

T = TypeVar("T")


def _ghost(value: object) -> object:
    return {"login": "ghost", "type": "User"} if value is None else value


def _text(value: object) -> object:
    return "" if value is None else value


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class User(_Model):
    login: str
    type: str = "User"

    @property
    def is_bot(self) -> bool:
        return self.type == "Bot"


_User = Annotated[User, BeforeValidator(_ghost)]
_Text = Annotated[str, BeforeValidator(_text)]


class Label(_Model):
    name: str


class PullRequestLink(_Model):
    merged_at: datetime | None = None


class Item(_Model):
    """An issue or a pull request as the issues endpoints return it."""

    number: int
    title: str
    body: _Text = ""
    state: str
    state_reason: str | None = None
    user: _User
    labels: list[Label] = []
    html_url: str
    created_at: datetime
    updated_at: datetime
    closed_at: datetime | None = None
    author_association: str = "NONE"
    pull_request: PullRequestLink | None = None
    comments: int = 0

    @property
    def is_pull(self) -> bool:
        return self.pull_request is not None

    @property
    def merged(self) -> bool:
        return self.pull_request is not None and self.pull_request.merged_at is not None

    @property
    def label_names(self) -> list[str]:
        return [label.name for label in self.labels]


def _number_from_url(url: str) -> int:
    return int(url.rstrip("/").rsplit("/", 1)[1])


class Comment(_Model):
    """An issue or pull request conversation comment."""

    id: int
    body: _Text = ""
    user: _User
    html_url: str
    issue_url: str
    created_at: datetime
    updated_at: datetime
    author_association: str = "NONE"

    @property
    def number(self) -> int:
        """The number of the issue or pull request it is on."""
        return _number_from_url(self.issue_url)


class Review(_Model):
    id: int
    body: _Text = ""
    user: _User
    state: str
    html_url: str
    pull_request_url: str
    submitted_at: datetime | None = None
    author_association: str = "NONE"

    @property
    def number(self) -> int:
        return _number_from_url(self.pull_request_url)


class ReviewComment(_Model):
    """A comment on a pull request's diff."""

    id: int
    body: _Text = ""
    user: _User
    html_url: str
    pull_request_url: str
    created_at: datetime
    updated_at: datetime
    author_association: str = "NONE"
    path: str = ""
    pull_request_review_id: int | None = None
    in_reply_to_id: int | None = None

    @property
    def number(self) -> int:
        return _number_from_url(self.pull_request_url)


class Branch(_Model):
    ref: str
    sha: str = ""


class Pull(_Model):
    number: int
    title: str
    body: _Text = ""
    state: str
    merged: bool = False
    merged_at: datetime | None = None
    closed_at: datetime | None = None
    updated_at: datetime
    user: _User
    html_url: str
    head: Branch
    base: Branch
    draft: bool = False
    labels: list[Label] = []


class Reaction(_Model):
    id: int
    content: str
    user: _User


class RateState(_Model):
    """One rate-limit resource as GitHub last reported it."""

    limit: int
    remaining: int
    used: int = 0
    reset: int
    resource: str = "core"


class RateLimitStatus(_Model):
    core: RateState
    graphql: RateState | None = None


@dataclass(frozen=True, slots=True)
class ClosingIssue:
    """An issue a pull request will close: ``repo`` is ``OWNER/REPO``."""

    repo: str
    number: int


@dataclass(frozen=True, slots=True)
class Listing(Generic[T]):
    """The items of a paginated listing.

    ``not_modified``: every page answered 304 (nothing changed since the cached answer).
    ``complete``: every page was read; False when ``max_pages`` cut it short, in which case an
    item missing from ``items`` may still exist (do not reconcile closures from it).
    """

    items: list[T]
    not_modified: bool
    complete: bool = True
