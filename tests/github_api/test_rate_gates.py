"""Rate limits outlive the client that met them: shared through the state database."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from the_loop.github.api import GitHubClient, RateLimited
from the_loop.github.rate_gates import SqliteRateGates
from the_loop.store import open_database

MakeClient = Callable[..., GitHubClient]
pytestmark = pytest.mark.reliability


async def test_a_limit_one_client_met_stops_the_next_one(
    gh: FakeGitHub, make_client: MakeClient, tmp_path: Path
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.exhaust_rate_limit(reset_in=3600)
    async with make_client(gates=SqliteRateGates(open_database(tmp_path))) as client:
        with pytest.raises(RateLimited) as met:
            await client.get_issue(REPO, n)
    assert gh.count() == 1
    async with make_client(gates=SqliteRateGates(open_database(tmp_path))) as restarted:
        with pytest.raises(RateLimited, match="not sending") as refused:
            await restarted.list_open_items(REPO, "the-loop")
    assert refused.value.reset_at == met.value.reset_at
    assert gh.count() == 1  # the second client sent nothing
    async with make_client(gates=SqliteRateGates(open_database(tmp_path / "other"))) as other:
        with pytest.raises(RateLimited):  # another database knows nothing: GitHub refuses
            await other.get_issue(REPO, n)
    assert gh.count() == 2


async def test_a_secondary_limit_is_shared_too(
    gh: FakeGitHub, make_client: MakeClient, tmp_path: Path
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.secondary_limit_next(retry_after=600)
    async with make_client(gates=SqliteRateGates(open_database(tmp_path))) as client:
        with pytest.raises(RateLimited) as met:
            await client.get_issue(REPO, n)
    assert met.value.secondary
    async with make_client(gates=SqliteRateGates(open_database(tmp_path))) as restarted:
        with pytest.raises(RateLimited, match="not sending"):
            await restarted.add_reaction(REPO, "eyes", number=n)
    assert gh.count() == 1


async def test_an_expired_limit_lets_requests_through(
    gh: FakeGitHub, make_client: MakeClient, tmp_path: Path
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.exhaust_rate_limit(reset_in=3600)
    db = open_database(tmp_path)
    async with make_client(gates=SqliteRateGates(db)) as client:
        with pytest.raises(RateLimited) as met:
            await client.get_issue(REPO, n)
    gh.set_rate_limit(used=0)

    def later() -> float:
        return met.value.reset_at + 1

    async with make_client(gates=SqliteRateGates(db), clock=later) as after_reset:
        assert (await after_reset.get_issue(REPO, n)).number == n
