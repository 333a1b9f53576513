"""Where work events come from, and the little that differs between those places (pure).

One row per source: who may drive agents from it (and how an actor matches an entry of that
list), whether ``github.webhook.events`` filters its events, whether its keywords may start a
session, and whether a refusal is explained where the event was written. Every other rule of
the engine is the same for every source.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from the_loop.config import Config


@dataclass(frozen=True, slots=True)
class Source:
    """What differs between the places work events come from; everything else is one rule.

    ``allowed`` is the setting naming who may drive agents (``users`` reads it from the
    config, ``match`` compares an actor against one of its entries); ``typed`` says whether
    ``github.webhook.events`` filters the source's events; ``arms`` whether its keywords may
    start a session; ``explains`` whether a refusal (paused, no live session, unauthorized) is
    answered where it was written, so that the person who wrote it learns why."""

    allowed: str
    users: Callable[[Config], Sequence[str]]
    match: Callable[[str, str], bool]
    typed: bool = True
    arms: bool = True
    explains: bool = False


def _same_login(actor: str, login: str) -> bool:
    return actor.lower() == login.lower()


def _same_slack_user(actor: str, user: str) -> bool:
    return actor == f"slack:{user}"


SOURCES: Mapping[str, Source] = {
    "github": Source("routing.authorizedUsers", lambda c: c.routing.authorized_users, _same_login),
    "slack": Source(
        "slack.authorizedUsers",
        lambda c: c.slack.authorized_users,
        _same_slack_user,
        typed=False,
        arms=False,
        explains=True,
    ),
}
"""The sources the engine knows, by ``WorkEvent.source``; an unknown source is GitHub's."""


def source_of(name: str) -> Source:
    """The rules of source NAME (GitHub's for a name the table lacks)."""
    return SOURCES.get(name, SOURCES["github"])


def is_authorized(actor: str, config: Config, source: str = "github") -> bool:
    """Rule 4: ACTOR may drive agents: listed in the source's list — GitHub logins in
    ``routing.authorizedUsers`` (any case), Slack user ids (``slack:<id>``) in
    ``slack.authorizedUsers`` (exactly). An empty list authorizes nobody."""
    rules = source_of(source)
    return any(rules.match(actor, user) for user in rules.users(config))
