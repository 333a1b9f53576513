"""Write-backs land on the fake GitHub, carry the self-marker and obey the switches."""

from __future__ import annotations

from collections.abc import Callable

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from the_loop.config import GitHubConfig
from the_loop.github import writeback
from the_loop.github.api import GitHubClient
from the_loop.github.markers import SELF_MARKER, has_self_marker
from the_loop.refs import WorkItemRef

MakeClient = Callable[..., GitHubClient]


async def test_pickup_delivery_and_announcement(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "Flaky test")
    ask = gh.add_comment(REPO, n, "the-loop start", author="carol")
    ref = WorkItemRef.parse(f"github:{REPO}#{n}")
    config = GitHubConfig()
    async with make_client() as client:
        eyes = await writeback.react_pickup(client, config, ref, comment_id=ask)
        tada = await writeback.react_first_delivery(client, config, ref, True)
        posted = await writeback.announce(client, config, ref, "Started an agent.\nAttach: x")
    assert eyes is not None and eyes.content == "eyes"
    assert tada is not None and tada.content == "hooray"
    assert [r["content"] for r in gh.reactions(REPO, comment_id=ask)] == ["eyes"]
    assert [r["content"] for r in gh.reactions(REPO, number=n)] == ["hooray"]
    assert posted is not None and has_self_marker(posted.body)
    bodies = [c["body"] for c in gh.comments(REPO, n)]
    assert bodies[-1] == f"Started an agent.\nAttach: x\n\n{SELF_MARKER}"
    assert gh.comments(REPO, n)[-1]["user"]["login"] == gh.login


async def test_failed_first_delivery_is_confused(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "x")
    ref = WorkItemRef.parse(f"{REPO}#{n}")
    async with make_client() as client:
        await writeback.react_first_delivery(client, GitHubConfig(), ref, False)
    assert [r["content"] for r in gh.reactions(REPO, number=n)] == ["confused"]


async def test_every_comment_carries_the_marker_once(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    ref = WorkItemRef.parse(f"{REPO}#{n}")
    async with make_client() as client:
        await writeback.post_comment(client, ref, "Two keywords: nothing done.")
        await writeback.post_comment(client, ref, f"already marked {SELF_MARKER}")
    bodies = [c["body"] for c in gh.comments(REPO, n)]
    assert all(body.count(SELF_MARKER) == 1 for body in bodies)


async def test_switches_turn_write_backs_off(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "x")
    ref = WorkItemRef.parse(f"{REPO}#{n}")
    off = GitHubConfig(reactions=False, announce=False)
    async with make_client() as client:
        assert await writeback.react_pickup(client, off, ref) is None
        assert await writeback.react_first_delivery(client, off, ref, True) is None
        assert await writeback.announce(client, off, ref, "hello") is None
    assert gh.count() == 0
    assert gh.comments(REPO, n) == [] and gh.reactions(REPO, number=n) == []
