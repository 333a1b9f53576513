"""Fixtures for the GitHub client tests: a running fake GitHub and clients pointed at it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.fakes.fake_github import FakeGitHub
from the_loop.github.api import GitHubClient

REPO = "octo/app"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    """A running fake GitHub with the repository ``octo/app``."""
    with FakeGitHub() as fake:
        fake.create_repo(REPO, collaborators=["carol"])
        yield fake


@pytest.fixture
def make_client(gh: FakeGitHub) -> Callable[..., GitHubClient]:
    """Build a client for the fake: tiny backoffs, short timeout; KWARGS override."""

    def make(fake: FakeGitHub | None = None, **kwargs: Any) -> GitHubClient:
        target = fake or gh
        options: dict[str, Any] = {
            "token": target.token,
            "api_url": target.api_url,
            "timeout": 2.0,
            "retries": 2,
            "backoff": 0.001,
            "max_backoff": 0.005,
        }
        options.update(kwargs)
        return GitHubClient(**options)

    return make
