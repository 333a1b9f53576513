"""The fake GitHub itself: shapes, ETags, rate limits, pagination and faults, over real HTTP."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from tests.helpers import wait_until


@pytest.fixture
def http(gh: FakeGitHub) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"token {gh.token}", "Accept": "application/vnd.github+json"}
    with httpx.Client(base_url=gh.api_url, headers=headers, timeout=5) as client:
        yield client


def test_issue_and_pull_shapes(gh: FakeGitHub, http: httpx.Client) -> None:
    n = gh.add_issue(REPO, "Bug", "body", labels=["the-loop"], author="carol")
    pr = gh.add_pull(REPO, "Fix", f"fixes #{n}", head_ref="issue-1", author="renovate[bot]")
    issue = http.get(f"/repos/{REPO}/issues/{n}").json()
    as_issue = http.get(f"/repos/{REPO}/issues/{pr}").json()
    pull = http.get(f"/repos/{REPO}/pulls/{pr}").json()
    assert issue["user"]["login"] == "carol" and issue["user"]["type"] == "User"
    assert issue["author_association"] == "COLLABORATOR"
    assert issue["labels"][0]["name"] == "the-loop" and "pull_request" not in issue
    assert issue["html_url"] == f"https://github.com/{REPO}/issues/{n}"
    assert issue["created_at"].endswith("Z") and issue["state_reason"] is None
    assert as_issue["pull_request"]["merged_at"] is None
    assert pull["head"]["ref"] == "issue-1" and pull["merged"] is False
    assert pull["user"]["type"] == "Bot"
    assert http.get(f"/repos/{REPO}/pulls/{n}").status_code == 404  # an issue is no pull


def test_listing_filters_and_sorts_like_github(gh: FakeGitHub, http: httpx.Client) -> None:
    a = gh.add_issue(REPO, "a", labels=["the-loop", "bug"])
    b = gh.add_pull(REPO, "b", labels=["The-Loop"])
    gh.add_issue(REPO, "c", labels=["bug"])
    gh.advance(5)
    since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(gh.now()))
    gh.add_comment(REPO, a, "bump")
    listed = http.get(f"/repos/{REPO}/issues", params={"labels": "the-loop"}).json()
    assert [i["number"] for i in listed] == [b, a]  # default: created, desc
    by_update = http.get(
        f"/repos/{REPO}/issues", params={"labels": "the-loop", "sort": "updated"}
    ).json()
    assert [i["number"] for i in by_update] == [a, b]
    both = http.get(f"/repos/{REPO}/issues", params={"labels": "the-loop,bug"}).json()
    assert [i["number"] for i in both] == [a]
    recent = http.get(f"/repos/{REPO}/issues", params={"since": since}).json()
    assert [i["number"] for i in recent] == [a]


def test_comment_bumps_updated_at_and_count(gh: FakeGitHub, http: httpx.Client) -> None:
    n = gh.add_issue(REPO, "x")
    before = http.get(f"/repos/{REPO}/issues/{n}").json()
    gh.advance(3)
    posted = http.post(f"/repos/{REPO}/issues/{n}/comments", json={"body": "hi"})
    after = http.get(f"/repos/{REPO}/issues/{n}").json()
    assert posted.status_code == 201 and posted.headers["location"] == posted.json()["url"]
    assert posted.json()["user"]["login"] == gh.login
    assert after["comments"] == 1 and after["updated_at"] > before["updated_at"]
    bad = http.post(f"/repos/{REPO}/issues/{n}/comments", json={})
    assert bad.status_code == 422


def test_etag_304_is_free_and_changes_with_the_body(gh: FakeGitHub, http: httpx.Client) -> None:
    n = gh.add_issue(REPO, "x")
    first = http.get(f"/repos/{REPO}/issues/{n}")
    etag = first.headers["etag"]
    assert etag.startswith('"') and first.headers["x-ratelimit-used"] == "1"
    again = http.get(f"/repos/{REPO}/issues/{n}", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["x-ratelimit-used"] == "1" and again.headers["etag"] == etag
    gh.add_label(REPO, n, "bug")
    changed = http.get(f"/repos/{REPO}/issues/{n}", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.headers["etag"] != etag
    log = gh.requests()
    assert [(r.status, r.conditional, r.cost) for r in log] == [
        (200, False, True),
        (304, True, False),
        (200, True, True),
    ]


def test_pagination_links(gh: FakeGitHub, http: httpx.Client) -> None:
    for i in range(7):
        gh.add_issue(REPO, f"i{i}")
    first = http.get(f"/repos/{REPO}/issues", params={"per_page": 3})
    assert first.links["next"]["url"].endswith("page=2")
    assert first.links["last"]["url"].endswith("page=3") and "prev" not in first.links
    middle = http.get(first.links["next"]["url"])
    assert set(middle.links) == {"prev", "next", "last", "first"}
    last = http.get(first.links["last"]["url"])
    assert len(last.json()) == 1 and "next" not in last.links
    assert first.links["next"]["url"].startswith(gh.api_url)


def test_auth_is_required(gh: FakeGitHub) -> None:
    missing = httpx.get(f"{gh.api_url}/user")
    wrong = httpx.get(f"{gh.api_url}/user", headers={"Authorization": "Bearer nope"})
    right = httpx.get(f"{gh.api_url}/user", headers={"Authorization": f"Bearer {gh.token}"})
    assert missing.status_code == 401 and missing.json()["message"] == "Requires authentication"
    assert wrong.status_code == 401 and wrong.json()["message"] == "Bad credentials"
    assert "documentation_url" in wrong.json()
    assert right.json()["login"] == gh.login
    assert "authorization" not in gh.requests()[-1].headers  # the log keeps no token


def test_not_found_and_rate_headers(gh: FakeGitHub, http: httpx.Client) -> None:
    missing = http.get("/repos/octo/nope/issues")
    assert missing.status_code == 404 and missing.json()["message"] == "Not Found"
    for name in ("limit", "remaining", "used", "reset", "resource"):
        assert f"x-ratelimit-{name}" in missing.headers


def test_primary_limit_until_reset(gh: FakeGitHub, http: httpx.Client) -> None:
    gh.exhaust_rate_limit(reset_in=30)
    limited = http.get(f"/repos/{REPO}/issues")
    assert limited.status_code == 403 and "rate limit exceeded" in limited.json()["message"]
    assert limited.headers["x-ratelimit-remaining"] == "0"
    assert int(limited.headers["x-ratelimit-reset"]) >= gh.now() + 29
    assert http.get("/rate_limit").status_code == 200  # always answered, free
    gh.advance(31)
    assert http.get(f"/repos/{REPO}/issues").status_code == 200


def test_scripted_faults(gh: FakeGitHub, http: httpx.Client) -> None:
    gh.fail_next(1, status=503, path="/repos/*/issues")
    gh.secondary_limit_next(1, retry_after=7, status=429)
    assert http.get("/user").status_code == 429  # the path-filtered fault skipped /user
    assert http.get(f"/repos/{REPO}/issues").status_code == 503
    assert http.get(f"/repos/{REPO}/issues").status_code == 200
    assert gh.requests(status=429)[0].cost is False


def test_hang_outlasts_a_client_timeout_and_stop_releases_it() -> None:
    fake = FakeGitHub().start()
    fake.hang_next(seconds=60)
    with (
        httpx.Client(headers={"Authorization": f"Bearer {fake.token}"}) as client,
        pytest.raises(httpx.ReadTimeout),
    ):
        client.get(f"{fake.api_url}/user", timeout=0.2)
    assert fake.count() == 0  # still hanging: not answered yet
    started = time.monotonic()
    fake.stop()
    wait_until(lambda: fake.count(path="/user") == 1, timeout=5, what="the released request")
    assert time.monotonic() - started < 5


def test_stop_closes_pooled_connections() -> None:
    fake = FakeGitHub().start()
    client = httpx.Client(headers={"Authorization": f"Bearer {fake.token}"}, timeout=2)
    assert client.get(f"{fake.api_url}/user").status_code == 200
    url = f"{fake.api_url}/user"
    fake.stop()
    with pytest.raises(httpx.TransportError):
        client.get(url)
    client.close()


def test_reactions_are_idempotent_per_user(gh: FakeGitHub, http: httpx.Client) -> None:
    n = gh.add_issue(REPO, "x")
    first = http.post(f"/repos/{REPO}/issues/{n}/reactions", json={"content": "eyes"})
    second = http.post(f"/repos/{REPO}/issues/{n}/reactions", json={"content": "eyes"})
    invalid = http.post(f"/repos/{REPO}/issues/{n}/reactions", json={"content": "tada"})
    assert (first.status_code, second.status_code, invalid.status_code) == (201, 200, 422)
    assert first.json()["id"] == second.json()["id"]
    assert http.get(f"/repos/{REPO}/issues/{n}").json()["reactions"]["eyes"] == 1


def test_merge_closes_linked_issues_and_graphql_reports_them(
    gh: FakeGitHub, http: httpx.Client
) -> None:
    issue = gh.add_issue(REPO, "bug")
    pr = gh.add_pull(REPO, "fix", f"Resolves #{issue}")
    query = (
        'query { repository(owner: "octo", name: "app") { pullRequest(number: PR) '
        "{ closingIssuesReferences(first: 10) { nodes { number repository "
        "{ nameWithOwner } } } } } }"
    ).replace("PR", str(pr))
    answer = http.post("/graphql", json={"query": query}).json()
    nodes = answer["data"]["repository"]["pullRequest"]["closingIssuesReferences"]["nodes"]
    assert nodes == [{"number": issue, "repository": {"nameWithOwner": REPO}}]
    gh.merge_pull(REPO, pr)
    assert gh.issue(REPO, issue)["state"] == "closed"
    assert http.get(f"/repos/{REPO}/pulls/{pr}").json()["merged"] is True
    unknown = http.post("/graphql", json={"query": "{ viewer { login } }"}).json()
    assert "errors" in unknown


def test_enterprise_prefix_serves_only_under_it() -> None:
    with FakeGitHub(prefix="/api/v3") as ghe:
        ghe.create_repo(REPO)
        headers = {"Authorization": f"Bearer {ghe.token}"}
        assert httpx.get(f"{ghe.api_url}/user", headers=headers).status_code == 200
        assert httpx.get(f"{ghe.base_url}/user", headers=headers).status_code == 404
        gql = httpx.post(f"{ghe.base_url}/api/graphql", headers=headers, json={"query": "{}"})
        assert gql.status_code == 200
        assert ghe.requests()[0].path == "/user"


def test_request_log_can_be_waited_on(gh: FakeGitHub, http: httpx.Client) -> None:
    http.get("/user")
    wait_until(lambda: gh.count(path="/user") == 1, timeout=2)
    gh.reset_log()
    assert gh.count() == 0
