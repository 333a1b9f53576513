"""Fixtures for the outbox tests: a fake GitHub, and a context whose write-backs go to it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Env
from tests.fakes import payloads as P
from tests.fakes.fake_github import FakeGitHub
from the_loop.context import Ctx, open_ctx
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent, WorkKind

REPO = "octo/repo"
# The fake serves on 127.0.0.1, so refs carry that host as an enterprise host would (SPEC §1).
HOST = "127.0.0.1"


def github_section(gh: FakeGitHub, **extra: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "apiUrl": gh.api_url,
        "tokenEnv": "FAKE_GH_TOKEN",
        "repos": [REPO],
        "timeoutSeconds": 0.5,
        "retries": 1,
        **extra,
    }


@pytest.fixture
def gh(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.create_repo(REPO)
        monkeypatch.setenv("FAKE_GH_TOKEN", fake.token)
        yield fake


@pytest.fixture
def ctx(loop_env: Env, gh: FakeGitHub) -> Iterator[Ctx]:
    loop_env.write_config(github=github_section(gh))
    c = open_ctx(loop_env.config_path)
    yield c
    c.db.close()


@dataclass
class Item:
    """An issue on the fake with the comment that asked for work, and its work event."""

    number: int
    comment_id: int
    ref: WorkItemRef
    event: WorkEvent


def asked(gh: FakeGitHub, delivery: str = "d-1") -> Item:
    number = gh.add_issue(REPO, "Flaky test", labels=["the-loop"])
    cid = gh.add_comment(REPO, number, "the-loop start", author="alice")
    ref = WorkItemRef.parse(f"github:{HOST}/{REPO}#{number}")
    event = WorkEvent(
        kind=WorkKind.COMMENT,
        event_name="issue_comment",
        action="created",
        delivery_id=delivery,
        actor="alice",
        actor_is_bot=False,
        host=HOST,
        repository=REPO,
        items=(ref,),
        own=ref,
        body="the-loop start",
        excerpt={"comment.id": cid},
    )
    return Item(number, cid, ref, event)


def start_payload(item: Item) -> dict[str, Any]:
    """The webhook payload of ITEM's ``the-loop start`` comment (ids as on the fake)."""
    payload = P.issue_comment_event("the-loop start", number=item.number, repo=REPO)
    payload["comment"]["id"] = item.comment_id
    return payload
