"""The GitHub client against the fake GitHub over real HTTP."""

from __future__ import annotations

import asyncio
import socket
import traceback
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from the_loop.errors import NotFound, Unavailable
from the_loop.github.api import (
    CachedResponse,
    ClosingIssue,
    GitHubAuthFailed,
    GitHubClient,
    GitHubError,
    GitHubNotFound,
    GitHubUnavailable,
    MemoryEtagStore,
    RateLimited,
)

MakeClient = Callable[..., GitHubClient]


class Clock:
    """A settable clock for the client's rate-limit gate (epoch seconds)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- listings, pagination, ETags ---------------------------------------------------------------


async def test_list_open_items_returns_labelled_issues_and_pulls(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    issue = gh.add_issue(REPO, "Flaky test", "body", labels=["the-loop"], author="alice")
    gh.add_issue(REPO, "Unlabelled", labels=["bug"])
    pull = gh.add_pull(REPO, "Fix it", labels=["the-loop", "bug"], head_ref="issue-1")
    closed = gh.add_issue(REPO, "Done", labels=["the-loop"])
    gh.close_issue(REPO, closed)
    async with make_client() as client:
        listing = await client.list_open_items(REPO, "the-loop")
    by_number = {item.number: item for item in listing.items}
    assert set(by_number) == {issue, pull}
    assert by_number[pull].is_pull and not by_number[issue].is_pull
    assert by_number[issue].user.login == "alice"
    assert by_number[issue].label_names == ["the-loop"]
    assert not listing.not_modified
    (request,) = gh.requests(path=f"/repos/{REPO}/issues")
    assert request.query["labels"] == "the-loop" and request.query["state"] == "open"
    assert request.query["per_page"] == "100"


async def test_pagination_follows_link_next_across_pages(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    numbers = {gh.add_issue(REPO, f"issue {i}", labels=["the-loop"]) for i in range(230)}
    async with make_client() as client:
        listing = await client.list_open_items(REPO, "the-loop")
    assert [i.number for i in listing.items if i.number in numbers] == [
        i.number for i in listing.items
    ]
    assert {i.number for i in listing.items} == numbers
    assert len(listing.items) == 230
    pages = [r.query.get("page", "1") for r in gh.requests(path=f"/repos/{REPO}/issues")]
    assert pages == ["1", "2", "3"] and listing.complete


async def test_listing_cut_short_by_max_pages_is_not_complete(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    for i in range(230):
        gh.add_issue(REPO, f"issue {i}", labels=["the-loop"])
    async with make_client(max_pages=2) as client:
        listing = await client.list_open_items(REPO, "the-loop")
    assert len(listing.items) == 200 and not listing.complete


async def test_unchanged_listing_is_a_304_that_costs_no_rate_limit(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "Flaky", labels=["the-loop"])
    async with make_client() as client:
        first = await client.list_open_items(REPO, "the-loop")
        remaining = gh.rate_remaining()
        cost = gh.cost()
        second = await client.list_open_items(REPO, "the-loop")
        assert second.not_modified and second.items == first.items
        assert gh.cost() == cost and gh.rate_remaining() == remaining
        last = gh.requests(path=f"/repos/{REPO}/issues")[-1]
        assert last.conditional and last.status == 304 and not last.cost
        gh.add_comment(REPO, n, "news")
        third = await client.list_open_items(REPO, "the-loop")
    assert not third.not_modified
    assert third.items[0].updated_at >= first.items[0].updated_at
    assert gh.cost() == cost + 1


async def test_unchanged_multi_page_listing_is_all_304(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    for i in range(150):
        gh.add_issue(REPO, f"issue {i}", labels=["the-loop"])
    async with make_client() as client:
        await client.list_open_items(REPO, "the-loop")
        gh.reset_log()
        again = await client.list_open_items(REPO, "the-loop")
    assert again.not_modified and len(again.items) == 150
    assert [r.status for r in gh.requests()] == [304, 304]
    assert gh.cost() == 0


async def test_weak_etags_are_revalidated_too(make_client: MakeClient) -> None:
    with FakeGitHub(weak_etags=True) as weak:
        weak.create_repo(REPO)
        weak.add_issue(REPO, "x", labels=["the-loop"])
        async with make_client(weak) as client:
            await client.list_open_items(REPO, "the-loop")
            again = await client.list_open_items(REPO, "the-loop")
        assert again.not_modified
        assert weak.requests()[-1].headers["if-none-match"].startswith('W/"')


async def test_etag_store_is_pluggable_and_shared_between_clients(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    gh.add_issue(REPO, "x", labels=["the-loop"])
    store = MemoryEtagStore()
    async with make_client(etags=store) as client:
        await client.list_open_items(REPO, "the-loop")
    assert len(store) == 1
    (key,) = store._entries
    entry = store.get(key)
    assert isinstance(entry, CachedResponse) and entry.etag.startswith('"')
    async with make_client(etags=store) as fresh:
        listing = await fresh.list_open_items(REPO, "the-loop")
    assert listing.not_modified and [i.title for i in listing.items] == ["x"]


async def test_repo_comments_since_and_item_comments(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    a = gh.add_issue(REPO, "a")
    b = gh.add_pull(REPO, "b")
    old = gh.add_comment(REPO, a, "old", author="alice")
    gh.advance(10)
    since = datetime.fromtimestamp(gh.now(), UTC)
    new_a = gh.add_comment(REPO, a, "the-loop start", author="carol")
    new_b = gh.add_comment(REPO, b, "on the PR", author="bob")
    async with make_client() as client:
        everything = await client.list_repo_comments(REPO)
        recent = await client.list_repo_comments(REPO, since)
        on_a = await client.list_item_comments(REPO, a)
    assert [c.id for c in everything.items] == [old, new_a, new_b]
    assert [(c.id, c.number) for c in recent.items] == [(new_a, a), (new_b, b)]
    assert recent.items[0].author_association == "COLLABORATOR"
    assert [c.body for c in on_a.items] == ["old", "the-loop start"]
    query = gh.requests(path=f"/repos/{REPO}/issues/comments")[-1].query
    assert query["sort"] == "updated" and query["direction"] == "asc"
    assert query["since"].endswith("Z")


async def test_reviews_and_review_comments(gh: FakeGitHub, make_client: MakeClient) -> None:
    pr = gh.add_pull(REPO, "feature")
    review = gh.add_review(REPO, pr, "Looks off", author="carol", state="CHANGES_REQUESTED")
    comment = gh.add_review_comment(REPO, pr, "nit", author="carol", path="src/x.py")
    async with make_client() as client:
        reviews = await client.list_reviews(REPO, pr)
        comments = await client.list_repo_review_comments(REPO)
    assert [(r.id, r.state, r.number, r.body) for r in reviews.items] == [
        (review, "CHANGES_REQUESTED", pr, "Looks off")
    ]
    assert [(c.id, c.number, c.path) for c in comments.items] == [(comment, pr, "src/x.py")]


# -- single items ---------------------------------------------------------------------------------


async def test_get_issue_and_pull(gh: FakeGitHub, make_client: MakeClient) -> None:
    issue = gh.add_issue(REPO, "bug")
    pr = gh.add_pull(REPO, "fix", f"Fixes #{issue}", head_ref="fix/issue-1")
    gh.merge_pull(REPO, pr)
    async with make_client() as client:
        got_issue = await client.get_issue(REPO, issue)
        got_pr_issue = await client.get_issue(REPO, pr)
        pull = await client.get_pull(REPO, pr)
    assert got_issue.state == "closed" and got_issue.state_reason == "completed"
    assert got_pr_issue.is_pull and got_pr_issue.merged
    assert pull.merged and pull.merged_at is not None and pull.state == "closed"
    assert pull.head.ref == "fix/issue-1" and pull.body == f"Fixes #{issue}"


async def test_missing_item_is_not_found(gh: FakeGitHub, make_client: MakeClient) -> None:
    async with make_client() as client:
        with pytest.raises(GitHubNotFound) as caught:
            await client.get_issue(REPO, 99)
    assert isinstance(caught.value, NotFound) and caught.value.github_status == 404
    assert "Not Found" in str(caught.value)
    assert gh.count(path=f"/repos/{REPO}/issues/99") == 1  # a 404 is permanent: no retry


async def test_closing_issues_via_graphql(gh: FakeGitHub, make_client: MakeClient) -> None:
    gh.create_repo("octo/lib")
    first = gh.add_issue(REPO, "one")
    second = gh.add_issue("octo/lib", "two")
    pr = gh.add_pull(REPO, "fix both", f"Closes #{first}")
    gh.set_closing_issues(REPO, pr, [("octo/lib", second)])
    async with make_client() as client:
        refs = await client.closing_issues(REPO, pr)
        with pytest.raises(GitHubNotFound):
            await client.closing_issues(REPO, 404)
    assert set(refs) == {ClosingIssue(REPO, first), ClosingIssue("octo/lib", second)}
    assert gh.count(method="POST", path="/graphql") == 2


async def test_rate_limit_endpoint_is_free(gh: FakeGitHub, make_client: MakeClient) -> None:
    gh.set_rate_limit(used=10)
    async with make_client() as client:
        status = await client.rate_limit()
        assert client.rate_state("core") is not None
    assert status.core.remaining == 4990 and status.core.resource == "core"
    assert status.graphql is not None and status.graphql.resource == "graphql"
    assert gh.cost() == 0


# -- writes ---------------------------------------------------------------------------------------


async def test_create_comment_and_reactions(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "x")
    cid = gh.add_comment(REPO, n, "the-loop start", author="carol")
    async with make_client() as client:
        posted = await client.create_comment(REPO, n, "hello")
        on_item = await client.add_reaction(REPO, "eyes", number=n)
        again = await client.add_reaction(REPO, "eyes", number=n)
        on_comment = await client.add_reaction(REPO, "hooray", comment_id=cid)
        with pytest.raises(ValueError):
            await client.add_reaction(REPO, "eyes")
    assert posted.body == "hello" and posted.user.login == gh.login and posted.number == n
    assert on_item.content == "eyes" and again.id == on_item.id
    assert [r["content"] for r in gh.reactions(REPO, number=n)] == ["eyes"]
    assert [r["content"] for r in gh.reactions(REPO, comment_id=cid)] == ["hooray"]
    assert on_comment.user.login == gh.login


# -- failures ---------------------------------------------------------------------------------


async def test_server_errors_are_retried_then_succeed(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.fail_next(2, status=502)
    async with make_client(retries=2) as client:
        item = await client.get_issue(REPO, n)
    assert item.number == n
    assert [r.status for r in gh.requests()] == [502, 502, 200]


async def test_server_errors_exhaust_retries_as_unavailable(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.fail_next(5)
    async with make_client(retries=2) as client:
        with pytest.raises(GitHubUnavailable) as caught:
            await client.get_issue(REPO, n)
    assert isinstance(caught.value, Unavailable)
    assert "500" in str(caught.value)
    assert gh.count() == 3


async def test_a_reset_named_by_a_server_error_wins_over_the_backoff(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.exhaust_rate_limit(reset_in=120)
    gh.fail_next(1, status=502)  # answered with the headers: nothing remains until the reset
    async with make_client(retries=2) as client:
        with pytest.raises(RateLimited, match="not sending") as caught:
            await client.get_issue(REPO, n)
    assert caught.value.reset_at > gh.now() + 100
    assert [r.status for r in gh.requests()] == [502]  # no retry sent before the reset


async def test_comment_is_not_retried_after_a_server_error(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.fail_next(1, path=f"/repos/{REPO}/issues/{n}/comments")
    async with make_client(retries=3) as client:
        with pytest.raises(GitHubUnavailable):
            await client.create_comment(REPO, n, "once")
    assert gh.count(method="POST") == 1


async def test_timeout_is_unavailable_and_retried(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "x")
    gh.hang_next(1, seconds=30)
    async with make_client(timeout=0.2, retries=0) as client:
        with pytest.raises(GitHubUnavailable, match="did not answer"):
            await client.get_issue(REPO, n)
    gh.hang_next(1, seconds=30)
    async with make_client(timeout=0.2, retries=1) as client:
        assert (await client.get_issue(REPO, n)).number == n


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_connection_refused_is_unavailable(make_client: MakeClient) -> None:
    api = f"http://127.0.0.1:{_free_port()}"
    async with make_client(api_url=api, retries=1) as client:
        with pytest.raises(GitHubUnavailable, match="cannot connect"):
            await client.get_issue(REPO, 1)


async def test_bad_credentials_is_a_clear_error_without_the_token(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    secret = "ghp_ThisIsTheSecretTokenValue1234567890ab"
    async with make_client(token=secret, token_source="$GITHUB_TOKEN") as client:
        with pytest.raises(GitHubAuthFailed) as caught:
            await client.list_open_items(REPO, "the-loop")
    error = caught.value
    assert isinstance(error, GitHubError) and error.github_status == 401
    assert "Bad credentials" in str(error) and "$GITHUB_TOKEN" in str(error)
    assert secret not in str(error) and secret not in repr(error.args)
    assert secret not in "".join(traceback.format_exception(error))
    assert gh.count(status=401) == 1


# -- rate limits ------------------------------------------------------------------------------


async def test_primary_limit_raises_and_gates_until_reset(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.exhaust_rate_limit(reset_in=120)
    clock = Clock(gh.now())
    async with make_client(clock=clock) as client:
        with pytest.raises(RateLimited) as caught:
            await client.get_issue(REPO, n)
        reset_at = caught.value.reset_at
        assert not caught.value.secondary and caught.value.resource == "core"
        assert 100 < caught.value.retry_after(clock.now) <= 121
        assert gh.count() == 1 and gh.requests()[0].status == 403
        clock.now = reset_at - 1
        with pytest.raises(RateLimited, match="not sending"):
            await client.list_open_items(REPO, "the-loop")
        assert gh.count() == 1  # refused client-side: nothing sent
        gh.set_rate_limit(used=0)
        clock.now = reset_at + 1
        assert (await client.get_issue(REPO, n)).number == n
    assert gh.count() == 2


async def test_last_remaining_request_closes_the_gate(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.set_rate_limit(limit=5, used=4, reset_in=300)
    async with make_client(clock=Clock(gh.now())) as client:
        assert (await client.get_issue(REPO, n)).number == n
        state = client.rate_state()
        assert state is not None and state.remaining == 0
        with pytest.raises(RateLimited):
            await client.get_issue(REPO, n)
    assert gh.count() == 1


@pytest.mark.parametrize("status", [403, 429])
async def test_secondary_limit_honours_retry_after(
    gh: FakeGitHub, make_client: MakeClient, status: int
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.secondary_limit_next(retry_after=30, status=status)
    clock = Clock(gh.now())
    async with make_client(clock=clock) as client:
        with pytest.raises(RateLimited) as caught:
            await client.get_issue(REPO, n)
        assert caught.value.secondary and caught.value.reset_at == clock.now + 30
        clock.now += 29
        with pytest.raises(RateLimited):
            await client.create_comment(REPO, n, "blocked")
        assert gh.count() == 1
        clock.now += 2
        assert (await client.get_issue(REPO, n)).number == n
    assert gh.count() == 2


async def test_secondary_limit_message_without_retry_after_waits_a_minute(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    n = gh.add_issue(REPO, "x")
    gh.secondary_limit_next(retry_after=None)
    clock = Clock(gh.now())
    async with make_client(clock=clock) as client:
        with pytest.raises(RateLimited) as caught:
            await client.get_issue(REPO, n)
    assert caught.value.secondary and caught.value.reset_at == clock.now + 60


async def test_graphql_rate_limit_is_rate_limited(gh: FakeGitHub, make_client: MakeClient) -> None:
    pr = gh.add_pull(REPO, "x")
    gh.exhaust_rate_limit(resource="graphql", reset_in=60)
    async with make_client(clock=Clock(gh.now())) as client:
        with pytest.raises(RateLimited) as caught:
            await client.closing_issues(REPO, pr)
        assert caught.value.resource == "graphql"
        assert (await client.get_pull(REPO, pr)).number == pr  # REST is not gated


# -- GitHub Enterprise --------------------------------------------------------------------------


async def test_enterprise_api_url_with_path_prefix(make_client: MakeClient) -> None:
    with FakeGitHub(prefix="/api/v3") as ghe:
        ghe.create_repo(REPO)
        issue = ghe.add_issue(REPO, "x", labels=["the-loop"])
        pr = ghe.add_pull(REPO, "y", f"fixes #{issue}", labels=["the-loop"])
        for i in range(120):
            ghe.add_issue(REPO, f"filler {i}", labels=["the-loop"])
        async with make_client(ghe) as client:
            assert client.api_url.endswith("/api/v3")
            assert client.graphql_url == f"{ghe.base_url}/api/graphql"
            listing = await client.list_open_items(REPO, "the-loop")
            refs = await client.closing_issues(REPO, pr)
        assert len(listing.items) == 122
        assert refs == [ClosingIssue(REPO, issue)]
        assert ghe.count(status=404) == 0
        assert ghe.count(path=f"/repos/{REPO}/issues") == 2


def test_importing_the_client_does_not_import_httpx() -> None:
    import subprocess
    import sys

    code = "import sys, the_loop.github.api; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_concurrent_first_requests_share_one_client(
    gh: FakeGitHub, make_client: MakeClient
) -> None:
    numbers = [gh.add_issue(REPO, f"i{i}") for i in range(5)]
    async with make_client() as client:
        items = await asyncio.gather(*(client.get_issue(REPO, n) for n in numbers))
    assert [i.number for i in items] == numbers


def test_usable_from_sync_code_with_asyncio_run(gh: FakeGitHub, make_client: MakeClient) -> None:
    n = gh.add_issue(REPO, "x", labels=["the-loop"])

    async def main() -> list[int]:
        async with make_client() as client:
            return [i.number for i in (await client.list_open_items(REPO, "the-loop")).items]

    assert asyncio.run(main()) == [n]
    assert asyncio.run(main()) == [n]  # a new loop, a new client: fine
