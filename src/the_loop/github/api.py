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
  secondary one (``Retry-After`` or GitHub's "secondary rate limit" message) raises
  ``RateLimited`` carrying ``reset_at``; it is never retried inside the client.
- **Transient failures** (5xx, timeouts, connection errors) are retried ``retries`` times
  with exponential backoff, then raise ``GitHubUnavailable``. Reads and idempotent writes
  (reactions) retry on all of them; creating a comment retries only when the request
  provably never reached GitHub (connect failures), so a comment is never posted twice.
- **Permanent failures** (other 4xx) raise ``GitHubError`` with GitHub's status and message;
  404 raises ``GitHubNotFound`` (also a ``NotFound``); 401 raises ``GitHubAuthFailed``.

httpx is imported when the first client is built, so importing this module stays cheap.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import random
import re
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Generic, Literal, Protocol, TypeVar
from urllib.parse import urlencode, urlsplit

from pydantic import BaseModel, BeforeValidator, ConfigDict, ValidationError

from the_loop import __version__
from the_loop.errors import LoopError, NotFound, Unavailable
from the_loop.refs import validate_owner_repo

if TYPE_CHECKING:
    import ssl

    import httpx

    from the_loop.config import GitHubConfig

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
PER_PAGE = 100
GH_TIMEOUT_SECONDS = 10.0
SECONDARY_DEFAULT_WAIT = 60.0
ReactionContent = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


# ---------------------------------------------------------------------------------------------
# errors


class GitHubError(LoopError):
    """GitHub refused a request for good (a 4xx other than a rate limit): do not retry.

    ``github_status`` is GitHub's HTTP status, ``github_message`` its ``message``.
    """

    status = 502
    code = "github_error"

    def __init__(self, message: str, *, github_status: int = 0, github_message: str = "") -> None:
        super().__init__(message)
        self.github_status = github_status
        self.github_message = github_message


class GitHubNotFound(GitHubError, NotFound):
    """GitHub answered 404 (or GraphQL NOT_FOUND): the repository or item does not exist."""

    status = 404
    code = "github_not_found"


class GitHubAuthFailed(GitHubError):
    """GitHub rejected the token (401)."""

    code = "github_auth_failed"


class GitHubTokenMissing(LoopError):
    """No token: the environment variable is unset and ``gh auth token`` gave none."""

    status = 503
    code = "github_token_missing"


class GitHubUnavailable(Unavailable):
    """GitHub did not answer usefully (5xx, timeout, connection error): retrying may help."""

    code = "github_unavailable"


class RateLimited(GitHubUnavailable):
    """GitHub's rate limit is exhausted until ``reset_at`` (epoch seconds).

    ``secondary`` tells a secondary (abuse) limit from the primary hourly one; ``resource`` is
    the limit's resource (``core``, ``graphql``, or ``*`` for a secondary limit).
    """

    code = "github_rate_limited"

    def __init__(
        self, message: str, *, reset_at: float, secondary: bool = False, resource: str = "core"
    ) -> None:
        super().__init__(message)
        self.reset_at = reset_at
        self.secondary = secondary
        self.resource = resource

    def retry_after(self, now: float | None = None) -> float:
        """Seconds from NOW (default: the current time) until a request may be sent again."""
        return max(0.0, self.reset_at - (time.time() if now is None else now))


# ---------------------------------------------------------------------------------------------
# models: only the fields the-loop uses


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


# ---------------------------------------------------------------------------------------------
# the ETag cache


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """What a conditional GET needs: the validator, the body and the pagination links."""

    etag: str
    body: bytes
    link: str | None = None
    stored_at: float = 0.0


class EtagStore(Protocol):
    """Where the client keeps ETags and bodies, keyed by the request URL.

    Implementations must be safe to call from the event loop (fast, non-blocking in practice)
    and may persist across processes; a lost entry only costs one full request.
    """

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, key: str, entry: CachedResponse) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryEtagStore:
    """An ``EtagStore`` in a dict, for one process (the default)."""

    def __init__(self) -> None:
        self._entries: dict[str, CachedResponse] = {}

    def get(self, key: str) -> CachedResponse | None:
        return self._entries.get(key)

    def put(self, key: str, entry: CachedResponse) -> None:
        self._entries[key] = entry

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)


# ---------------------------------------------------------------------------------------------
# the token


def resolve_token(
    token_env: str = "GITHUB_TOKEN",
    *,
    api_url: str = DEFAULT_API_URL,
    environ: Mapping[str, str] | None = None,
    gh_timeout: float = GH_TIMEOUT_SECONDS,
) -> str:
    """The token from ``$TOKEN_ENV``, else from ``gh auth token`` for API_URL's host.

    Raises ``GitHubTokenMissing`` naming both sources when neither gives one; never includes
    the token in a message.
    """
    env = os.environ if environ is None else environ
    token = env.get(token_env, "").strip()
    if token:
        return token
    argv = ["gh", "auth", "token"]
    host = _gh_host(api_url)
    if host != "github.com":
        argv += ["--hostname", host]
    return _gh_token(argv, token_env, gh_timeout)


def _gh_host(api_url: str) -> str:
    host = urlsplit(api_url).netloc.lower()
    return "github.com" if host in {"api.github.com", "github.com"} else host


def _gh_token(argv: list[str], token_env: str, timeout: float) -> str:
    hint = f"export {token_env}=<token>, or install gh and run `gh auth login`"
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise GitHubTokenMissing(f"${token_env} is unset and gh is not installed: {hint}") from None
    except subprocess.TimeoutExpired:
        raise GitHubTokenMissing(
            f"${token_env} is unset and `gh auth token` did not answer within {timeout:g}s"
        ) from None
    except OSError as exc:
        raise GitHubTokenMissing(f"${token_env} is unset and gh failed: {exc.strerror}") from None
    token = proc.stdout.strip()
    if proc.returncode != 0 or not token:
        why = proc.stderr.strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        raise GitHubTokenMissing(
            f"${token_env} is unset and `gh auth token` gave no token ({why[0][:200]}): {hint}"
        )
    return token


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
    import httpx

    return httpx.create_ssl_context()


class GitHubClient:
    """An async GitHub REST/GraphQL client; see the module docstring for the contracts.

    ``token`` is the token or a function returning it (called once, in a worker thread, at
    the first request). ``retries``/``backoff``/``max_backoff`` bound the retries of
    transient failures; ``clock`` (epoch seconds) drives the rate-limit gate.
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
    ) -> None:
        self.api_url = api_url.rstrip("/")
        self.graphql_url = _graphql_url(self.api_url)
        self.etags: EtagStore = MemoryEtagStore() if etags is None else etags
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_pages = max_pages
        self.clock = clock
        self.token_source = token_source
        self._token_or_source = token
        self._token: str | None = token if isinstance(token, str) else None
        self._http: httpx.AsyncClient | None = None
        self._gates: dict[str, RateLimited] = {}
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
        return _parse(Item, page.data, "issue")

    async def get_pull(self, repo: str, number: int) -> Pull:
        """One pull request (``merged``, head and base branch)."""
        page = await self._get(self._url(f"/repos/{_repo(repo)}/pulls/{int(number)}"))
        return _parse(Pull, page.data, "pull request")

    async def get_user(self) -> User:
        """The account the token belongs to."""
        return _parse(User, (await self._get(self._url("/user"))).data, "user")

    async def rate_limit(self) -> RateLimitStatus:
        """GitHub's ``/rate_limit`` (free, and answered even while limited)."""
        response = await self._send("GET", self._url("/rate_limit"), gate=False)
        self._raise_for_status(response, "GET /rate_limit")
        resources = _json(response, "GET /rate_limit").get("resources", {})
        named = {
            name: {**value, "resource": name}
            for name, value in resources.items()
            if name in {"core", "graphql"} and isinstance(value, dict)
        }
        return _parse(RateLimitStatus, named, "rate limit")

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
        return _parse(Comment, _json(response, what), "comment")

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
        return _parse(Reaction, _json(response, f"POST {path}"), "reaction")

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
            items.extend(_parse(model, entry, path) for entry in page.data)
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
            return _Page(_loads(cached.body, what), True, cached.link)
        self._raise_for_status(response, what)
        if response.status_code == 304:
            raise GitHubUnavailable(f"GitHub answered 304 to an unconditional {what}")
        data = _json(response, what)
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
        payload = _json(response, "POST graphql")
        _graphql_errors(payload, response, self.clock())
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
            self._check_gate(resource)
        http = await self._client()
        headers = {"If-None-Match": etag} if etag else {}
        what = f"{method} {_path_of(url)}"
        attempt = 0
        while True:
            outcome = await self._attempt(http, method, url, json_body, headers, what, idempotent)
            if not isinstance(outcome, _Failed):
                self._observe(outcome)
                return outcome
            if attempt >= self.retries or not outcome.retryable:
                raise outcome.error
            await asyncio.sleep(self._delay(attempt))
            attempt += 1

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
        import httpx

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
            self._observe(response)
            msg = f"GitHub answered {response.status_code} to {what}"
            return _transient(msg, idempotent)
        return response

    def _delay(self, attempt: int) -> float:
        base = min(self.max_backoff, self.backoff * 2.0**attempt)
        return base * (0.5 + random.random() / 2)

    async def _client(self) -> httpx.AsyncClient:
        """The connection pool, built at first use (after the token is resolved)."""
        if self._http is not None:
            return self._http
        import httpx

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

    def _check_gate(self, resource: str) -> None:
        """Raise the remembered ``RateLimited`` while RESOURCE (or everything) is limited."""
        now = self.clock()
        for key in (resource, "*"):
            limited = self._gates.get(key)
            if limited is not None and limited.reset_at > now:
                raise RateLimited(
                    f"{limited.message} (not sending until the reset, "
                    f"{limited.retry_after(now):.0f}s from now)",
                    reset_at=limited.reset_at,
                    secondary=limited.secondary,
                    resource=limited.resource,
                )

    def _observe(self, response: httpx.Response) -> None:
        """Record the rate-limit headers; close the gate when nothing remains."""
        state = _rate_from_headers(response.headers)
        if state is None:
            return
        self._rates[state.resource] = state
        if state.remaining <= 0 and state.reset > self.clock():
            self._gates[state.resource] = RateLimited(
                f"GitHub's {state.resource} rate limit is used up",
                reset_at=float(state.reset),
                resource=state.resource,
            )

    def _raise_for_status(self, response: httpx.Response, what: str) -> None:
        """Raise the typed error for a 4xx answer (rate limits first); pass anything else."""
        status = response.status_code
        if status < 400:
            return
        if status in (403, 429):
            limited = _rate_limit_error(response, what, self.clock())
            if limited is not None:
                self._gates[limited.resource] = limited
                raise limited
        raise _permanent(response, what, self.token_source)


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


def _loads(body: bytes, what: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        raise GitHubUnavailable(f"GitHub answered {what} with a body that is not JSON") from None


def _json(response: httpx.Response, what: str) -> Any:
    data = _loads(response.content, what)
    if not isinstance(data, dict | list):
        raise GitHubUnavailable(f"GitHub answered {what} with unexpected JSON")
    return data


def _parse(model: type[M], data: object, what: str) -> M:
    """Validate DATA as MODEL; an unexpected shape is a ``GitHubError`` naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise GitHubError(
            f"unexpected {what} from GitHub: {where}: {first['msg']}", github_status=200
        ) from None


def _message_of(response: httpx.Response) -> str:
    try:
        data = json.loads(response.content)
    except ValueError:
        return response.reason_phrase or ""
    message = data.get("message") if isinstance(data, dict) else None
    return str(message) if message else (response.reason_phrase or "")


def _rate_from_headers(headers: httpx.Headers) -> RateState | None:
    try:
        return RateState(
            limit=int(headers["x-ratelimit-limit"]),
            remaining=int(headers["x-ratelimit-remaining"]),
            used=int(headers.get("x-ratelimit-used", "0")),
            reset=int(headers["x-ratelimit-reset"]),
            resource=headers.get("x-ratelimit-resource", "core"),
        )
    except (KeyError, ValueError):
        return None


def _rate_limit_error(response: httpx.Response, what: str, now: float) -> RateLimited | None:
    """The ``RateLimited`` a 403/429 stands for, or None when it is a plain refusal."""
    headers = response.headers
    message = _message_of(response)
    retry_after = headers.get("retry-after")
    if retry_after is not None or "secondary rate limit" in message.lower():
        wait = _seconds(retry_after, SECONDARY_DEFAULT_WAIT)
        return RateLimited(
            f"GitHub's secondary rate limit hit on {what}: retry after {wait:g}s",
            reset_at=now + wait,
            secondary=True,
            resource="*",
        )
    state = _rate_from_headers(headers)
    if headers.get("x-ratelimit-remaining") == "0" or response.status_code == 429:
        reset = float(state.reset) if state else now + SECONDARY_DEFAULT_WAIT
        resource = state.resource if state else "core"
        return RateLimited(
            f"GitHub's {resource} rate limit is used up ({what}); it resets in "
            f"{max(0.0, reset - now):.0f}s",
            reset_at=reset,
            resource=resource,
        )
    return None


def _seconds(value: str | None, default: float) -> float:
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default


def _permanent(response: httpx.Response, what: str, token_source: str) -> GitHubError:
    status = response.status_code
    message = _message_of(response)
    if status == 401:
        return GitHubAuthFailed(
            f"GitHub rejected the token from {token_source} ({status} {message}) on {what}; "
            "check the token or run `gh auth login`",
            github_status=status,
            github_message=message,
        )
    cls = GitHubNotFound if status == 404 else GitHubError
    return cls(
        f"GitHub answered {status} to {what}: {message}",
        github_status=status,
        github_message=message,
    )


def _graphql_errors(payload: Mapping[str, Any], response: httpx.Response, now: float) -> None:
    """Raise the typed error for a GraphQL answer carrying ``errors``."""
    errors = payload.get("errors")
    if not errors or not isinstance(errors, list):
        return
    first = errors[0] if isinstance(errors[0], dict) else {}
    kind, message = str(first.get("type", "")), str(first.get("message", "GraphQL error"))
    if kind == "RATE_LIMITED":
        state = _rate_from_headers(response.headers)
        reset = float(state.reset) if state else now + SECONDARY_DEFAULT_WAIT
        raise RateLimited(
            f"GitHub's GraphQL rate limit: {message}", reset_at=reset, resource="graphql"
        )
    if kind == "NOT_FOUND":
        raise GitHubNotFound(
            f"GitHub GraphQL: {message}", github_status=404, github_message=message
        )
    if payload.get("data") is None:
        raise GitHubError(f"GitHub GraphQL: {message}", github_status=200, github_message=message)
