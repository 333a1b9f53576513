"""The one doorway to GitHub's HTTP API: an async client on httpx with an ETag cache.

Nothing else in the-loop speaks HTTP to GitHub. ``GitHubClient`` is asynchronous (the daemon
runs on asyncio); the synchronous CLI drives it with ``asyncio.run`` and creates the client
inside the coroutine (an httpx client belongs to one event loop)::

    async with GitHubClient.from_config(config.github) as gh:
        listing = await gh.list_open_items("octo/app", "the-loop")

Contracts:

- **Token**: from the environment variable named by ``github.tokenEnv``, else
  ``gh auth token`` (``resolve_token``), resolved once, at the first request. The token is
  never logged and never part of an error message.
- **ETag cache**: every GET is cached by URL in an ``EtagStore`` (in memory by default; the
  poller passes a persistent one). A cached URL is requested with ``If-None-Match``; a 304 is
  answered from the store, costs no rate limit, and is reported as ``not_modified``.
- **Pagination**: listings follow ``Link: rel="next"`` (only within ``apiUrl``), at most
  ``max_pages`` pages (``Listing.complete`` says whether all were read); each page is its own
  conditional request.
- **Rate limits**: ``X-RateLimit-*`` headers are recorded (``rate_state``). A response with
  ``remaining: 0`` closes a client-side gate until the reset: any request before then raises
  ``RateLimited`` without being sent. A primary limit (403/429 with ``remaining: 0``) or a
  secondary one (``Retry-After`` or GitHub's "secondary rate limit" message) closes the gate
  too and raises ``RateLimited`` carrying ``reset_at``; it is never retried inside the client.
  Given a ``RateGates`` store (``github.rate_gates``), every gate closed is saved there and the
  store's gates are honoured before each request, so a limit outlives the client and the
  process that met it.
- **Transient failures** (5xx, timeouts, connection errors) are retried ``retries`` times
  with exponential backoff (``the_loop.backoff``), then raise ``GitHubUnavailable``; when the
  failed answer closed a rate-limit gate, its reset wins: ``RateLimited``, no retry sent
  before it. Reads and idempotent writes (reactions) retry on all of them; creating a
  comment retries only when the request provably never reached GitHub (connect failures), so
  a comment is never posted twice.
- **Permanent failures** (other 4xx) raise ``GitHubError`` with GitHub's status and message;
  404 raises ``GitHubNotFound`` (also a ``NotFound``); 401 raises ``GitHubAuthFailed``.

httpx is imported when the first client is built, so importing this module stays cheap. The
client is here; its vocabulary lives in modules of one job each and is re-exported from this
one: ``github.errors``, ``github.models``, ``github.cache`` (the ETag cache contract),
``github.token`` and ``github.responses`` (reading answers and refusals).
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel

from the_loop import __version__
from the_loop.backoff import Backoff
from the_loop.github.cache import CachedResponse, EtagStore, MemoryEtagStore
from the_loop.github.errors import (
    GitHubAuthFailed,
    GitHubError,
    GitHubNotFound,
    GitHubTokenMissing,
    GitHubUnavailable,
    RateLimited,
)
from the_loop.github.models import (
    Branch,
    ClosingIssue,
    Comment,
    Item,
    Label,
    Listing,
    Pull,
    PullRequestLink,
    RateLimitStatus,
    RateState,
    Reaction,
    Review,
    ReviewComment,
    User,
)
from the_loop.github.rate_gates import Gates, RateGates
from the_loop.github.responses import (
    gates_closed_by,
    json_of,
    loads,
    parse_model,
    permanent_error,
    raise_graphql_errors,
    rate_from_headers,
    rate_limit_error,
)
from the_loop.github.token import DEFAULT_API_URL, resolve_token
from the_loop.refs import validate_owner_repo

if TYPE_CHECKING:
    import ssl

    import httpx  # lazy: start-up (httpx costs ~20 ms)

    from the_loop.config import GitHubConfig

__all__ = [  # the doorway's whole vocabulary stays importable from here
    "Branch",
    "CachedResponse",
    "ClosingIssue",
    "Comment",
    "EtagStore",
    "GitHubAuthFailed",
    "GitHubClient",
    "GitHubError",
    "GitHubNotFound",
    "GitHubTokenMissing",
    "GitHubUnavailable",
    "Item",
    "Label",
    "Listing",
    "MemoryEtagStore",
    "Pull",
    "PullRequestLink",
    "RateLimitStatus",
    "RateLimited",
    "RateState",
    "Reaction",
    "Review",
    "ReviewComment",
    "User",
    "resolve_token",
]

API_VERSION = "2022-11-28"
PER_PAGE = 100
ReactionContent = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]

M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------------------------
# the client

_CLOSING_QUERY = """
query($owner: String!, $name: String!, $number: Int!) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      closingIssuesReferences(first: 50) { nodes { number repository { nameWithOwner } } }
    }
  }
}
"""
_LINK_NEXT_RE = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')


@dataclass(frozen=True, slots=True)
class _Page:
    data: Any
    not_modified: bool
    link: str | None


@dataclass(frozen=True, slots=True)
class _Failed:
    """A transient failure of one try; ``retryable`` is False when a retry could duplicate."""

    error: GitHubUnavailable
    retryable: bool


@functools.lru_cache(maxsize=1)
def _tls_context() -> ssl.SSLContext:
    """httpx's default TLS context, built once per process: loading the CA bundle takes about
    20 ms of CPU, and a client is built for every write-back."""
    import httpx  # lazy: start-up (httpx costs ~20 ms)

    return httpx.create_ssl_context()


class GitHubClient:
    """An async GitHub REST/GraphQL client; see the module docstring for the contracts.

    ``token`` is the token or a function returning it (called once, in a worker thread, at
    the first request). ``retries``/``backoff``/``max_backoff`` bound the retries of
    transient failures; ``clock`` (epoch seconds) drives the rate-limit gate; ``gates`` shares
    the gates beyond this client (in memory only when None).
    """

    def __init__(
        self,
        *,
        token: str | Callable[[], str],
        api_url: str = DEFAULT_API_URL,
        etags: EtagStore | None = None,
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_pages: int = 50,
        clock: Callable[[], float] = time.time,
        token_source: str = "the configured token",
        gates: RateGates | None = None,
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.graphql_url = _graphql_url(self.api_url)
        self.etags: EtagStore = MemoryEtagStore() if etags is None else etags
        self.timeout = timeout
        self.retries = retries
        self.backoff = Backoff(base=backoff, cap=max_backoff)
        self.max_pages = max_pages
        self.clock = clock
        self.token_source = token_source
        self._token_or_source = token
        self._token: str | None = token if isinstance(token, str) else None
        self._http: httpx.AsyncClient | None = None
        self.gates = Gates(self.api_url, gates)
        self._rates: dict[str, RateState] = {}

    @classmethod
    def from_config(cls, config: GitHubConfig, **kwargs: Any) -> GitHubClient:
        """A client for the ``github`` config section (``apiUrl``, ``tokenEnv``)."""
        env, url = config.token_env, config.api_url
        return cls(
            token=lambda: resolve_token(env, api_url=url),
            api_url=url,
            token_source=f"${env} (or `gh auth token`)",
            **kwargs,
        )

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r})"

    async def __aenter__(self) -> GitHubClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool; the client can be used again afterwards."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def rate_state(self, resource: str = "core") -> RateState | None:
        """The rate limit of RESOURCE as the last response reported it, if any."""
        return self._rates.get(resource)

    # -- public API: reads ------------------------------------------------------------------

    async def list_open_items(self, repo: str, label: str | None = None) -> Listing[Item]:
        """Open issues and pull requests of REPO carrying LABEL, most recently updated first."""
        params = {"state": "open", "sort": "updated", "direction": "desc"}
        if label:
            params["labels"] = label
        return await self._list(f"/repos/{_repo(repo)}/issues", params, Item)

    async def list_repo_comments(
        self, repo: str, since: datetime | str | None = None
    ) -> Listing[Comment]:
        """Conversation comments on every issue and pull request of REPO updated at or after
        SINCE, oldest update first. Pass a stable SINCE (the newest ``updated_at`` already
        seen) so an idle poll repeats the same URL and is answered 304."""
        params = {"sort": "updated", "direction": "asc", **_since(since)}
        return await self._list(f"/repos/{_repo(repo)}/issues/comments", params, Comment)

    async def list_repo_review_comments(
        self, repo: str, since: datetime | str | None = None
    ) -> Listing[ReviewComment]:
        """Diff comments on every pull request of REPO updated at or after SINCE, oldest first."""
        params = {"sort": "updated", "direction": "asc", **_since(since)}
        return await self._list(f"/repos/{_repo(repo)}/pulls/comments", params, ReviewComment)

    async def list_item_comments(
        self, repo: str, number: int, since: datetime | str | None = None
    ) -> Listing[Comment]:
        """Conversation comments on one issue or pull request, oldest first."""
        path = f"/repos/{_repo(repo)}/issues/{int(number)}/comments"
        return await self._list(path, _since(since), Comment)

    async def list_reviews(self, repo: str, number: int) -> Listing[Review]:
        """Reviews of pull request NUMBER, in submission order."""
        return await self._list(f"/repos/{_repo(repo)}/pulls/{int(number)}/reviews", {}, Review)

    async def get_issue(self, repo: str, number: int) -> Item:
        """One issue or pull request (state, ``state_reason``, ``pull_request.merged_at``)."""
        page = await self._get(self._url(f"/repos/{_repo(repo)}/issues/{int(number)}"))
        return parse_model(Item, page.data, "issue")

    async def get_pull(self, repo: str, number: int) -> Pull:
        """One pull request (``merged``, head and base branch)."""
        page = await self._get(self._url(f"/repos/{_repo(repo)}/pulls/{int(number)}"))
        return parse_model(Pull, page.data, "pull request")

    async def get_user(self) -> User:
        """The account the token belongs to."""
        return parse_model(User, (await self._get(self._url("/user"))).data, "user")

    async def rate_limit(self) -> RateLimitStatus:
        """GitHub's ``/rate_limit`` (free, and answered even while limited)."""
        response = await self._send("GET", self._url("/rate_limit"), gate=False)
        self._raise_for_status(response, "GET /rate_limit")
        resources = json_of(response, "GET /rate_limit").get("resources", {})
        named = {
            name: {**value, "resource": name}
            for name, value in resources.items()
            if name in {"core", "graphql"} and isinstance(value, dict)
        }
        return parse_model(RateLimitStatus, named, "rate limit")

    async def closing_issues(self, repo: str, pr_number: int) -> list[ClosingIssue]:
        """Issues pull request PR_NUMBER closes when merged (GraphQL
        ``closingIssuesReferences``: manual links and closing keywords)."""
        owner, name = validate_owner_repo(repo)
        variables = {"owner": owner, "name": name, "number": int(pr_number)}
        data = await self._graphql(_CLOSING_QUERY, variables)
        pull = (data.get("repository") or {}).get("pullRequest")
        if pull is None:
            raise GitHubNotFound(f"no pull request {repo}#{pr_number} on GitHub", github_status=404)
        nodes = (pull.get("closingIssuesReferences") or {}).get("nodes") or []
        return [
            ClosingIssue(repo=str(n["repository"]["nameWithOwner"]), number=int(n["number"]))
            for n in nodes
            if isinstance(n, dict)
        ]

    # -- public API: writes -----------------------------------------------------------------

    async def create_comment(self, repo: str, number: int, body: str) -> Comment:
        """Post BODY as a comment on issue or pull request NUMBER."""
        url = self._url(f"/repos/{_repo(repo)}/issues/{int(number)}/comments")
        response = await self._send("POST", url, json_body={"body": body}, idempotent=False)
        what = f"POST /repos/{repo}/issues/{number}/comments"
        self._raise_for_status(response, what)
        return parse_model(Comment, json_of(response, what), "comment")

    async def add_reaction(
        self,
        repo: str,
        content: ReactionContent,
        *,
        number: int | None = None,
        comment_id: int | None = None,
    ) -> Reaction:
        """React with CONTENT to issue/PR NUMBER or to issue comment COMMENT_ID (exactly one).

        Idempotent on GitHub: the same reaction twice answers the existing one."""
        if (number is None) == (comment_id is None):
            raise ValueError("add_reaction needs exactly one of number or comment_id")
        tail = f"issues/{int(number)}" if number is not None else f"issues/comments/{comment_id}"
        path = f"/repos/{_repo(repo)}/{tail}/reactions"
        response = await self._send("POST", self._url(path), json_body={"content": content})
        self._raise_for_status(response, f"POST {path}")
        return parse_model(Reaction, json_of(response, f"POST {path}"), "reaction")

    # -- plumbing: listings and conditional GETs ---------------------------------------------

    def _url(self, path: str, params: Mapping[str, str] | None = None) -> str:
        query = f"?{urlencode(sorted(params.items()))}" if params else ""
        return f"{self.api_url}{path}{query}"

    async def _list(self, path: str, params: Mapping[str, str], model: type[M]) -> Listing[M]:
        url: str | None = self._url(path, {**params, "per_page": str(PER_PAGE)})
        items: list[M] = []
        unchanged = True
        pages = 0
        while url is not None and pages < self.max_pages:
            page = await self._get(url)
            if not isinstance(page.data, list):
                raise GitHubError(f"unexpected answer from GitHub to GET {path}: not a list")
            items.extend(parse_model(model, entry, path) for entry in page.data)
            unchanged = unchanged and page.not_modified
            url = self._next_url(page.link)
            pages += 1
        return Listing(items=items, not_modified=unchanged, complete=url is None)

    def _next_url(self, link: str | None) -> str | None:
        """The ``rel="next"`` URL, refused unless it stays under ``apiUrl``."""
        m = _LINK_NEXT_RE.search(link or "")
        if m is None:
            return None
        url = m.group(1)
        if not url.startswith(self.api_url + "/"):
            raise GitHubError(f"refusing to follow a pagination link outside {self.api_url}")
        return url

    async def _get(self, url: str) -> _Page:
        """GET URL conditionally when cached; a 304 answers from the cache."""
        cached = self.etags.get(url)
        response = await self._send("GET", url, etag=cached.etag if cached else None)
        what = f"GET {_path_of(url)}"
        if response.status_code == 304 and cached is not None:
            return _Page(loads(cached.body, what), True, cached.link)
        self._raise_for_status(response, what)
        if response.status_code == 304:
            raise GitHubUnavailable(f"GitHub answered 304 to an unconditional {what}")
        data = json_of(response, what)
        link = response.headers.get("link")
        etag = response.headers.get("etag")
        if etag:
            self.etags.put(url, CachedResponse(etag, response.content, link, self.clock()))
        elif cached is not None:
            self.etags.delete(url)
        return _Page(data, False, link)

    async def _graphql(self, query: str, variables: Mapping[str, object]) -> dict[str, Any]:
        """POST a GraphQL query; raise typed errors for GraphQL ``errors``; return ``data``."""
        response = await self._send(
            "POST",
            self.graphql_url,
            json_body={"query": query, "variables": variables},
            resource="graphql",
        )
        self._raise_for_status(response, "POST graphql")
        payload = json_of(response, "POST graphql")
        raise_graphql_errors(payload, response, self.clock())
        data = payload.get("data")
        if not isinstance(data, dict):
            raise GitHubError("GitHub's GraphQL answer carried no data", github_status=200)
        return data

    # -- plumbing: sending, retries, rate limits ---------------------------------------------

    async def _send(
        self,
        method: str,
        url: str,
        *,
        json_body: object = None,
        etag: str | None = None,
        resource: str = "core",
        gate: bool = True,
        idempotent: bool = True,
    ) -> httpx.Response:
        """Send one request with bounded retries of transient failures.

        Returns any response below 500 (the caller checks it); raises ``RateLimited`` before
        sending while the gate is closed, ``GitHubUnavailable`` when retries are exhausted.
        """
        if gate:
            await self.gates.check(resource, self.clock())
        http = await self._client()
        headers = {"If-None-Match": etag} if etag else {}
        what = f"{method} {_path_of(url)}"
        attempt = 0
        while True:
            outcome = await self._attempt(http, method, url, json_body, headers, what, idempotent)
            if not isinstance(outcome, _Failed):
                await self.gates.save(self._observe(outcome, what))
                return outcome
            if attempt >= self.retries or not outcome.retryable:
                raise outcome.error
            if gate:  # a reset the failed answer named wins over the backoff
                await self.gates.check(resource, self.clock())
            attempt += 1
            await asyncio.sleep(self.backoff.delay(attempt))

    async def _attempt(
        self,
        http: httpx.AsyncClient,
        method: str,
        url: str,
        json_body: object,
        headers: dict[str, str],
        what: str,
        idempotent: bool,
    ) -> httpx.Response | _Failed:
        """One try: the response, or the transient error it ended in (marked retryable)."""
        import httpx  # lazy: start-up (httpx costs ~20 ms)

        try:
            response = await http.request(method, url, json=json_body, headers=headers)
        except httpx.ConnectError as exc:
            return _transient(f"cannot connect to GitHub at {self.api_url} ({what}): {exc}", True)
        except httpx.ConnectTimeout:
            return _transient(f"connecting to GitHub at {self.api_url} timed out ({what})", True)
        except httpx.TimeoutException:
            msg = f"GitHub did not answer {what} within {self.timeout:g}s"
            return _transient(msg, idempotent)
        except httpx.TransportError as exc:
            return _transient(f"talking to GitHub failed ({what}): {exc}", idempotent)
        if response.status_code >= 500:
            self._observe(response, what)
            msg = f"GitHub answered {response.status_code} to {what}"
            return _transient(msg, idempotent)
        return response

    async def _client(self) -> httpx.AsyncClient:
        """The connection pool, built at first use (after the token is resolved)."""
        if self._http is not None:
            return self._http
        import httpx  # lazy: start-up (httpx costs ~20 ms)

        token = await self._resolve_token()
        if self._http is None:  # another task may have built it while the token resolved
            self._http = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout),
                verify=_tls_context(),
                # a renamed repository answers 301; httpx drops Authorization on a redirect
                # to another origin
                follow_redirects=True,
                headers={
                    "Authorization": f"Bearer {token}",
                    "Accept": "application/vnd.github+json",
                    "X-GitHub-Api-Version": API_VERSION,
                    "User-Agent": f"the-loop/{__version__}",
                },
            )
        return self._http

    async def _resolve_token(self) -> str:
        if self._token is None:
            source = self._token_or_source
            assert callable(source)
            self._token = await asyncio.to_thread(source)
        return self._token

    def _observe(self, response: httpx.Response, what: str) -> list[RateLimited]:
        """Record the rate-limit headers; close (in memory) and return the gates RESPONSE
        closes (``responses.gates_closed_by``)."""
        state = rate_from_headers(response.headers)
        if state is not None:
            self._rates[state.resource] = state
        closed = gates_closed_by(response, state, what, self.clock())
        self.gates.close(closed)
        return closed

    def _raise_for_status(self, response: httpx.Response, what: str) -> None:
        """Raise the typed error for a 4xx answer (rate limits first); pass anything else."""
        status = response.status_code
        if status < 400:
            return
        if status in (403, 429):
            limited = rate_limit_error(response, what, self.clock())
            if limited is not None:
                self.gates.close([limited])
                raise limited
        raise permanent_error(response, what, self.token_source)


# ---------------------------------------------------------------------------------------------
# helpers


def _repo(full_name: str) -> str:
    owner, name = validate_owner_repo(full_name)
    return f"{owner}/{name}"


def _since(since: datetime | str | None) -> dict[str, str]:
    if since is None:
        return {}
    if isinstance(since, datetime):
        stamp = since.astimezone(UTC) if since.tzinfo else since.replace(tzinfo=UTC)
        return {"since": stamp.strftime("%Y-%m-%dT%H:%M:%SZ")}
    return {"since": since}


def _graphql_url(api_url: str) -> str:
    """``https://api.github.com/graphql``; ``https://HOST/api/graphql`` for ``…/api/v3``."""
    if api_url.endswith("/api/v3"):
        return api_url[: -len("/v3")] + "/graphql"
    return f"{api_url}/graphql"


def _path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _transient(message: str, retryable: bool) -> _Failed:
    return _Failed(GitHubUnavailable(message), retryable)
