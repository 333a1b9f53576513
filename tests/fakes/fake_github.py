"""A fake GitHub REST API (and a sliver of GraphQL) on loopback, faithful where the-loop looks.

Real HTTP: a ``ThreadingHTTPServer`` on ``127.0.0.1`` (random port) in a background thread,
HTTP/1.1 keep-alive. Optionally served under a path prefix (``prefix="/api/v3"``) the way
GitHub Enterprise Server serves its API; GraphQL is then at ``/api/graphql``, like GHES.

What it models, after GitHub's documented behaviour:

- issues and pull requests sharing one number sequence per repository; ``GET .../issues``
  lists both (pull requests carry a ``pull_request`` key) with ``state``, ``labels`` (all
  must match), ``sort``, ``direction``, ``since``, ``per_page`` (max 100) and ``page``;
- issue comments (per item and repository-wide), reviews, review comments (per pull request
  and repository-wide), reactions on items and on comments, ``closingIssuesReferences``;
- ``updated_at`` bumped by every change of an item, including a new comment, review or review
  comment; timestamps in whole seconds, ISO 8601 with ``Z``; ids monotonic;
- a strong ETag on every successful GET, computed from the body; ``If-None-Match`` matching it
  is answered ``304`` with no body and costs no rate limit;
- ``X-RateLimit-Limit/Remaining/Used/Reset/Resource`` on every response; a primary limit that
  answers 403 with ``remaining: 0`` until its reset; ``GET /rate_limit`` costs nothing;
- pagination ``Link`` headers (``prev``, ``next``, ``last``, ``first``) with absolute URLs;
- token auth (``Authorization: Bearer|token``): a missing token is 401 ``Requires
  authentication``, an unknown one 401 ``Bad credentials``; unknown things are 404
  ``Not Found``; GitHub's JSON error shape with ``documentation_url``.

Scriptable failures (consumed in order, optionally only for paths matching a glob):
``fail_next`` (5xx), ``hang_next`` (answer only after a delay longer than a client timeout),
``secondary_limit_next`` (403/429 with ``Retry-After``) and ``exhaust_rate_limit``.

Every request is recorded (``RecordedRequest``): method, path (prefix removed), query, status,
whether it was conditional and whether it cost rate limit. All methods are thread-safe.

Usage::

    with FakeGitHub() as gh:
        gh.create_repo("octo/app")
        n = gh.add_issue("octo/app", "Flaky test", labels=["the-loop"], author="alice")
        gh.add_comment("octo/app", n, "the-loop start", author="alice")
        ...  # point the client at gh.api_url with gh.token
        assert gh.count(path="/repos/octo/app/issues", status=304) == 1
"""

from __future__ import annotations

import base64
import contextlib
import fnmatch
import hashlib
import itertools
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

DEFAULT_TOKEN = "ghp_FakeTokenForTests0000000000000000000000"
DEFAULT_LOGIN = "the-loop-bot"
DOCS = "https://docs.github.com/rest"
RATE_LIMIT = 5000
GRAPHQL_LIMIT = 5000
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
REVIEW_STATES = ("APPROVED", "CHANGES_REQUESTED", "COMMENTED", "DISMISSED", "PENDING")
_CLOSING_KEYWORD_RE = re.compile(
    r"(?<![\w-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+"
    r"(?:(?P<repo>[A-Za-z0-9-]+/[A-Za-z0-9._-]+))?#(?P<num>[0-9]+)\b",
    re.IGNORECASE,
)

Json = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# records and state


@dataclass(frozen=True)
class RecordedRequest:
    """One request the fake answered."""

    seq: int
    method: str
    path: str
    query: dict[str, str]
    status: int
    conditional: bool
    cost: bool
    headers: dict[str, str]
    body: Any

    @property
    def not_modified(self) -> bool:
        return self.status == 304


@dataclass
class _Fault:
    kind: str  # "status" | "hang" | "secondary"
    remaining: int
    path: str | None
    status: int = 500
    seconds: float = 0.0


@dataclass
class _Item:
    number: int
    id: int
    title: str
    body: str
    author: str
    labels: list[str]
    created_at: int
    updated_at: int
    is_pull: bool = False
    state: str = "open"
    state_reason: str | None = None
    closed_at: int | None = None
    head_ref: str = ""
    base_ref: str = "main"
    draft: bool = False
    merged_at: int | None = None
    closing: list[tuple[str, int]] = field(default_factory=list)
    comments: int = 0
    review_comments: int = 0


@dataclass
class _Comment:
    id: int
    number: int
    author: str
    body: str
    created_at: int
    updated_at: int


@dataclass
class _Review:
    id: int
    number: int
    author: str
    body: str
    state: str
    submitted_at: int


@dataclass
class _ReviewComment:
    id: int
    number: int
    review_id: int | None
    author: str
    body: str
    path: str
    line: int
    created_at: int
    updated_at: int
    in_reply_to: int | None = None


@dataclass
class _Reaction:
    id: int
    user: str
    content: str
    created_at: int


@dataclass
class _Repo:
    owner: str
    name: str
    id: int
    collaborators: set[str] = field(default_factory=set)
    members: set[str] = field(default_factory=set)
    next_number: int = 1
    items: dict[int, _Item] = field(default_factory=dict)
    comments: dict[int, _Comment] = field(default_factory=dict)
    reviews: dict[int, _Review] = field(default_factory=dict)
    review_comments: dict[int, _ReviewComment] = field(default_factory=dict)
    reactions: dict[tuple[str, int], list[_Reaction]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


@dataclass
class _Window:
    limit: int
    used: int
    reset: int


@dataclass
class _Incoming:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    raw_body: bytes
    in_prefix: bool

    def json(self) -> Any:
        if not self.raw_body:
            return None
        return json.loads(self.raw_body)


@dataclass
class _Reply:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    cost: bool = False
    resource: str = "core"


class _Fail(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


def iso(ts: float) -> str:
    """Epoch seconds → GitHub's ``YYYY-MM-DDTHH:MM:SSZ``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _parse_since(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        raise _Fail(
            422, "Validation Failed", errors=[{"field": "since", "code": "invalid"}]
        ) from None


def _node_id(kind: str, ident: int) -> str:
    raw = base64.b64encode(ident.to_bytes(8, "big")).decode().rstrip("=")
    return f"{kind}_kwDO{raw}"


# ---------------------------------------------------------------------------------------------
# the server


class FakeGitHub:
    """A fake GitHub API server: ``with FakeGitHub() as gh`` or ``start()`` / ``stop()``."""

    def __init__(
        self,
        *,
        prefix: str = "",
        token: str = DEFAULT_TOKEN,
        login: str = DEFAULT_LOGIN,
        html_url: str = "https://github.com",
        weak_etags: bool = False,
    ) -> None:
        self.prefix = prefix.rstrip("/")
        self.token = token
        self.login = login
        self.html_url = html_url.rstrip("/")
        self.weak_etags = weak_etags
        self._tokens: dict[str, str] = {token: login}
        self._lock = threading.RLock()
        self._repos: dict[str, _Repo] = {}
        self._ids = itertools.count(1000)
        self._user_ids: dict[str, int] = {}
        self._offset = 0.0
        now = int(time.time())
        self._windows = {
            "core": _Window(RATE_LIMIT, 0, now + 3600),
            "graphql": _Window(GRAPHQL_LIMIT, 0, now + 3600),
        }
        self._faults: list[_Fault] = []
        self._log: list[RecordedRequest] = []
        self._seq = itertools.count(1)
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Bind a random loopback port and serve in a daemon thread."""
        self._server = _Server(("127.0.0.1", 0), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, release hanging requests and close every open connection."""
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.close_all()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "the fake is not running"
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no prefix)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def api_url(self) -> str:
        """The REST root a client should use as ``apiUrl`` (prefix included)."""
        return f"{self.base_url}{self.prefix}"

    @property
    def graphql_path(self) -> str:
        """``/graphql`` on github.com's shape, ``/api/graphql`` under a GHES ``/api/v3``."""
        if self.prefix.endswith("/v3"):
            return self.prefix[: -len("/v3")] + "/graphql"
        return f"{self.prefix}/graphql"

    # -- clock ----------------------------------------------------------------------------

    def now(self) -> int:
        """The fake's clock in whole epoch seconds (real time plus ``advance`` offsets)."""
        return int(time.time() + self._offset)

    def advance(self, seconds: float) -> None:
        """Move the fake's clock forward (timestamps and rate-limit resets)."""
        with self._lock:
            self._offset += seconds

    # -- users and repos --------------------------------------------------------------------

    def add_token(self, token: str, login: str) -> None:
        """Accept TOKEN as belonging to LOGIN."""
        with self._lock:
            self._tokens[token] = login

    def create_repo(
        self, full_name: str, *, collaborators: Iterable[str] = (), members: Iterable[str] = ()
    ) -> None:
        """Create OWNER/REPO (idempotent); COLLABORATORS/MEMBERS set ``author_association``."""
        owner, _, name = full_name.partition("/")
        with self._lock:
            repo = self._repos.get(full_name.lower())
            if repo is None:
                repo = _Repo(owner=owner, name=name, id=next(self._ids))
                self._repos[full_name.lower()] = repo
            repo.collaborators.update(collaborators)
            repo.members.update(members)

    def _repo(self, full_name: str) -> _Repo:
        repo = self._repos.get(full_name.lower())
        if repo is None:
            raise _Fail(404, "Not Found")
        return repo

    def _full(self, full_name: str) -> str:
        """The canonical spelling of a repository name (GitHub matches names case-insensitively)."""
        repo = self._repos.get(full_name.lower())
        return repo.full_name if repo else full_name

    def _item(self, full_name: str, number: int) -> _Item:
        item = self._repo(full_name).items.get(number)
        if item is None:
            raise _Fail(404, "Not Found")
        return item

    # -- scripting: items -------------------------------------------------------------------

    def add_issue(
        self,
        repo: str,
        title: str,
        body: str = "",
        *,
        labels: Iterable[str] = (),
        author: str = "alice",
    ) -> int:
        """Open an issue; returns its number."""
        return self._add_item(repo, title, body, labels, author, is_pull=False)

    def add_pull(
        self,
        repo: str,
        title: str,
        body: str = "",
        *,
        labels: Iterable[str] = (),
        author: str = "alice",
        head_ref: str = "feature",
        base_ref: str = "main",
        draft: bool = False,
    ) -> int:
        """Open a pull request from HEAD_REF; returns its number."""
        return self._add_item(
            repo,
            title,
            body,
            labels,
            author,
            is_pull=True,
            head_ref=head_ref,
            base_ref=base_ref,
            draft=draft,
        )

    def _add_item(
        self,
        repo: str,
        title: str,
        body: str,
        labels: Iterable[str],
        author: str,
        **extra: Any,
    ) -> int:
        with self._lock:
            r = self._repo(repo)
            now = self.now()
            number = r.next_number
            r.next_number += 1
            r.items[number] = _Item(
                number=number,
                id=next(self._ids),
                title=title,
                body=body,
                author=author,
                labels=list(dict.fromkeys(labels)),
                created_at=now,
                updated_at=now,
                **extra,
            )
            return number

    def close_issue(self, repo: str, number: int, *, state_reason: str = "completed") -> None:
        """Close an issue or pull request (unmerged); STATE_REASON as GitHub reports it."""
        with self._lock:
            item = self._item(repo, number)
            now = self.now()
            item.state, item.closed_at, item.updated_at = "closed", now, now
            item.state_reason = None if item.is_pull else state_reason

    def reopen_issue(self, repo: str, number: int) -> None:
        """Reopen a closed issue or unmerged pull request."""
        with self._lock:
            item = self._item(repo, number)
            if item.merged_at is not None:
                raise ValueError("a merged pull request cannot be reopened")
            item.state, item.closed_at, item.updated_at = "open", None, self.now()
            item.state_reason = None if item.is_pull else "reopened"

    def merge_pull(self, repo: str, number: int, *, close_linked: bool = True) -> None:
        """Merge a pull request (closed, ``merged: true``); closes its closing references too."""
        with self._lock:
            item = self._item(repo, number)
            if not item.is_pull or item.state != "open":
                raise ValueError(f"#{number} is not an open pull request")
            now = self.now()
            item.state, item.closed_at, item.merged_at, item.updated_at = "closed", now, now, now
            if close_linked:
                for full, n in self._closing_refs(repo, item):
                    linked = self._repos.get(full.lower())
                    if linked and n in linked.items and linked.items[n].state == "open":
                        self.close_issue(full, n)

    def set_closing_issues(self, repo: str, pr: int, refs: Iterable[int | tuple[str, int]]) -> None:
        """Link issues the pull request closes (``N`` in the same repo, or ``("o/r", N)``)."""
        with self._lock:
            item = self._item(repo, pr)
            item.closing = [(repo, r) if isinstance(r, int) else r for r in refs]

    def _closing_refs(self, repo: str, item: _Item) -> list[tuple[str, int]]:
        """Explicit links plus closing keywords in the body, like GitHub's own linking."""
        refs = list(item.closing)
        for m in _CLOSING_KEYWORD_RE.finditer(item.body):
            ref = (m.group("repo") or repo, int(m.group("num")))
            if ref not in refs and ref[0].lower() in self._repos:
                refs.append(ref)
        return refs

    def add_label(self, repo: str, number: int, label: str) -> None:
        with self._lock:
            item = self._item(repo, number)
            if label not in item.labels:
                item.labels.append(label)
                item.updated_at = self.now()

    def remove_label(self, repo: str, number: int, label: str) -> None:
        with self._lock:
            item = self._item(repo, number)
            if label in item.labels:
                item.labels.remove(label)
                item.updated_at = self.now()

    def edit_item(
        self, repo: str, number: int, *, title: str | None = None, body: str | None = None
    ) -> None:
        with self._lock:
            item = self._item(repo, number)
            item.title = item.title if title is None else title
            item.body = item.body if body is None else body
            item.updated_at = self.now()

    # -- scripting: conversation -----------------------------------------------------------

    def add_comment(self, repo: str, number: int, body: str, *, author: str = "alice") -> int:
        """Comment on an issue or pull request (bumps its ``updated_at``); returns the id."""
        with self._lock:
            r = self._repo(repo)
            item = self._item(repo, number)
            now = self.now()
            cid = next(self._ids)
            r.comments[cid] = _Comment(cid, number, author, body, now, now)
            item.comments += 1
            item.updated_at = now
            return cid

    def edit_comment(self, repo: str, comment_id: int, body: str) -> None:
        with self._lock:
            r = self._repo(repo)
            c = r.comments[comment_id]
            c.body, c.updated_at = body, self.now()
            r.items[c.number].updated_at = c.updated_at

    def add_review(
        self,
        repo: str,
        number: int,
        body: str = "",
        *,
        author: str = "alice",
        state: str = "COMMENTED",
    ) -> int:
        """Submit a review on a pull request (bumps its ``updated_at``); returns the id."""
        if state not in REVIEW_STATES:
            raise ValueError(f"review state must be one of {REVIEW_STATES}")
        with self._lock:
            r = self._repo(repo)
            item = self._pull(repo, number)
            rid = next(self._ids)
            r.reviews[rid] = _Review(rid, number, author, body, state, self.now())
            item.updated_at = self.now()
            return rid

    def add_review_comment(
        self,
        repo: str,
        number: int,
        body: str,
        *,
        author: str = "alice",
        path: str = "README.md",
        line: int = 1,
        review_id: int | None = None,
        in_reply_to: int | None = None,
    ) -> int:
        """Comment on a pull request's diff (bumps its ``updated_at``); returns the id."""
        with self._lock:
            r = self._repo(repo)
            item = self._pull(repo, number)
            now = self.now()
            cid = next(self._ids)
            r.review_comments[cid] = _ReviewComment(
                cid, number, review_id, author, body, path, line, now, now, in_reply_to
            )
            item.review_comments += 1
            item.updated_at = now
            return cid

    def _pull(self, repo: str, number: int) -> _Item:
        item = self._item(repo, number)
        if not item.is_pull:
            raise _Fail(404, "Not Found")
        return item

    # -- scripting: failures and limits -------------------------------------------------------

    def fail_next(self, n: int = 1, *, status: int = 500, path: str | None = None) -> None:
        """Answer the next N requests (matching the PATH glob) with STATUS."""
        with self._lock:
            self._faults.append(_Fault("status", n, path, status=status))

    def hang_next(self, n: int = 1, *, seconds: float = 5.0, path: str | None = None) -> None:
        """Delay the next N requests by SECONDS before answering (released by ``stop``)."""
        with self._lock:
            self._faults.append(_Fault("hang", n, path, seconds=seconds))

    def secondary_limit_next(
        self,
        n: int = 1,
        *,
        retry_after: int | None = 60,
        status: int = 403,
        path: str | None = None,
    ) -> None:
        """Answer the next N requests with a secondary rate limit: STATUS, GitHub's message and
        ``Retry-After: RETRY_AFTER`` (no header when None, as GitHub sometimes does)."""
        seconds = -1.0 if retry_after is None else float(retry_after)
        with self._lock:
            self._faults.append(_Fault("secondary", n, path, status=status, seconds=seconds))

    def exhaust_rate_limit(self, *, reset_in: float = 60.0, resource: str = "core") -> None:
        """Use up the primary limit; requests get 403 until the reset RESET_IN seconds ahead."""
        with self._lock:
            w = self._windows[resource]
            w.used, w.reset = w.limit, int(self.now() + reset_in + 0.999)

    def set_rate_limit(
        self,
        *,
        limit: int | None = None,
        used: int | None = None,
        reset_in: float | None = None,
        resource: str = "core",
    ) -> None:
        with self._lock:
            w = self._windows[resource]
            w.limit = w.limit if limit is None else limit
            w.used = w.used if used is None else used
            w.reset = w.reset if reset_in is None else int(self.now() + reset_in + 0.999)

    def rate_remaining(self, resource: str = "core") -> int:
        with self._lock:
            w = self._window(resource)
            return max(0, w.limit - w.used)

    def _window(self, resource: str) -> _Window:
        w = self._windows[resource]
        if self.now() >= w.reset:
            w.used, w.reset = 0, self.now() + 3600
        return w

    def clear_faults(self) -> None:
        """Forget every scripted failure not used yet."""
        with self._lock:
            self._faults.clear()

    def faults_left(self) -> int:
        """How many scripted failures have not been used yet."""
        with self._lock:
            return sum(f.remaining for f in self._faults)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0 and (
                    fault.path is None or fnmatch.fnmatch(path, fault.path)
                ):
                    fault.remaining -= 1
                    return fault
            return None

    # -- the request log -------------------------------------------------------------------

    def requests(
        self, *, method: str | None = None, path: str | None = None, status: int | None = None
    ) -> list[RecordedRequest]:
        """Recorded requests, oldest first; PATH is a glob on the path without the prefix."""
        with self._lock:
            return [
                r
                for r in self._log
                if (method is None or r.method == method)
                and (path is None or fnmatch.fnmatch(r.path, path))
                and (status is None or r.status == status)
            ]

    def count(
        self, *, method: str | None = None, path: str | None = None, status: int | None = None
    ) -> int:
        return len(self.requests(method=method, path=path, status=status))

    def cost(self) -> int:
        """How many recorded requests counted against a rate limit."""
        with self._lock:
            return sum(1 for r in self._log if r.cost)

    def reset_log(self) -> None:
        with self._lock:
            self._log.clear()

    def _record(self, req: _Incoming, reply: _Reply) -> None:
        headers = {k: v for k, v in req.headers.items() if k != "authorization"}
        try:
            body = req.json()
        except ValueError:
            body = req.raw_body.decode("utf-8", "replace")
        with self._lock:
            self._log.append(
                RecordedRequest(
                    seq=next(self._seq),
                    method=req.method,
                    path=req.path,
                    query=req.query,
                    status=reply.status,
                    conditional="if-none-match" in req.headers,
                    cost=reply.cost,
                    headers=headers,
                    body=body,
                )
            )

    # -- views for assertions ----------------------------------------------------------------

    def issue(self, repo: str, number: int) -> Json:
        """The issue as ``GET /repos/{repo}/issues/{n}`` would answer it."""
        with self._lock:
            return self._issue_json(self._repo(repo), self._item(repo, number))

    def comments(self, repo: str, number: int) -> list[Json]:
        with self._lock:
            r = self._repo(repo)
            return [self._comment_json(r, c) for c in r.comments.values() if c.number == number]

    def reactions(
        self, repo: str, *, number: int | None = None, comment_id: int | None = None
    ) -> list[Json]:
        """Reactions on an item (NUMBER) or an issue comment (COMMENT_ID)."""
        key = ("issue", number) if number is not None else ("comment", comment_id or 0)
        with self._lock:
            return [self._reaction_json(x) for x in self._repo(repo).reactions.get(key, [])]

    # -- JSON shapes ---------------------------------------------------------------------------

    def _user_json(self, login: str) -> Json:
        uid = self._user_ids.setdefault(login, 5000 + len(self._user_ids))
        url = f"{self._api_base()}/users/{login}"
        return {
            "login": login,
            "id": uid,
            "node_id": _node_id("U", uid),
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
            "gravatar_id": "",
            "url": url,
            "html_url": f"{self.html_url}/{login}",
            "followers_url": f"{url}/followers",
            "following_url": f"{url}/following{{/other_user}}",
            "gists_url": f"{url}/gists{{/gist_id}}",
            "starred_url": f"{url}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{url}/subscriptions",
            "organizations_url": f"{url}/orgs",
            "repos_url": f"{url}/repos",
            "events_url": f"{url}/events{{/privacy}}",
            "received_events_url": f"{url}/received_events",
            "type": "Bot" if login.endswith("[bot]") else "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def _api_base(self) -> str:
        return self.api_url if self._server is not None else f"http://127.0.0.1{self.prefix}"

    def _association(self, repo: _Repo, login: str) -> str:
        if login.lower() == repo.owner.lower():
            return "OWNER"
        if login in repo.members:
            return "MEMBER"
        return "COLLABORATOR" if login in repo.collaborators else "NONE"

    def _reactions_summary(self, repo: _Repo, key: tuple[str, int], url: str) -> Json:
        found = repo.reactions.get(key, [])
        summary: Json = {"url": f"{url}/reactions", "total_count": len(found)}
        for content in REACTIONS:
            summary[content] = sum(1 for x in found if x.content == content)
        return summary

    def _reaction_json(self, x: _Reaction) -> Json:
        return {
            "id": x.id,
            "node_id": _node_id("REA", x.id),
            "user": self._user_json(x.user),
            "content": x.content,
            "created_at": iso(x.created_at),
        }

    def _issue_json(self, repo: _Repo, item: _Item) -> Json:
        api = f"{self._api_base()}/repos/{repo.full_name}"
        url = f"{api}/issues/{item.number}"
        kind = "pull" if item.is_pull else "issues"
        data: Json = {
            "url": url,
            "repository_url": api,
            "labels_url": f"{url}/labels{{/name}}",
            "comments_url": f"{url}/comments",
            "events_url": f"{url}/events",
            "html_url": f"{self.html_url}/{repo.full_name}/{kind}/{item.number}",
            "id": item.id,
            "node_id": _node_id("PR" if item.is_pull else "I", item.id),
            "number": item.number,
            "title": item.title,
            "user": self._user_json(item.author),
            "labels": [self._label_json(repo, name) for name in item.labels],
            "state": item.state,
            "state_reason": item.state_reason,
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": item.comments,
            "created_at": iso(item.created_at),
            "updated_at": iso(item.updated_at),
            "closed_at": iso(item.closed_at) if item.closed_at else None,
            "author_association": self._association(repo, item.author),
            "body": item.body,
            "reactions": self._reactions_summary(repo, ("issue", item.number), url),
        }
        if item.is_pull:
            data["draft"] = item.draft
            data["pull_request"] = {
                "url": f"{api}/pulls/{item.number}",
                "html_url": data["html_url"],
                "diff_url": f"{data['html_url']}.diff",
                "patch_url": f"{data['html_url']}.patch",
                "merged_at": iso(item.merged_at) if item.merged_at else None,
            }
        return data

    def _label_json(self, repo: _Repo, name: str) -> Json:
        lid = int(hashlib.sha256(f"{repo.full_name}:{name}".encode()).hexdigest()[:8], 16)
        return {
            "id": lid,
            "node_id": _node_id("LA", lid),
            "name": name,
            "color": "ededed",
            "url": f"{self._api_base()}/repos/{repo.full_name}/labels/{name}",
            "default": False,
            "description": None,
        }

    def _pull_json(self, repo: _Repo, item: _Item) -> Json:
        issue = self._issue_json(repo, item)
        api = f"{self._api_base()}/repos/{repo.full_name}"
        sha = hashlib.sha1(f"{repo.full_name}:{item.number}".encode()).hexdigest()
        data = {
            k: issue[k]
            for k in (
                "id",
                "node_id",
                "html_url",
                "number",
                "state",
                "locked",
                "title",
                "user",
                "body",
                "labels",
                "created_at",
                "updated_at",
                "closed_at",
                "author_association",
                "draft",
                "comments",
            )
        }
        data.update(
            {
                "url": f"{api}/pulls/{item.number}",
                "issue_url": issue["url"],
                "merged_at": issue["pull_request"]["merged_at"],
                "merged": item.merged_at is not None,
                "merge_commit_sha": sha if item.merged_at else None,
                "mergeable": None,
                "head": self._ref_json(repo, item.head_ref, sha),
                "base": self._ref_json(repo, item.base_ref, "0" * 40),
                "review_comments": item.review_comments,
                "commits": 1,
            }
        )
        return data

    def _ref_json(self, repo: _Repo, ref: str, sha: str) -> Json:
        return {
            "label": f"{repo.owner}:{ref}",
            "ref": ref,
            "sha": sha,
            "user": self._user_json(repo.owner),
            "repo": {"id": repo.id, "name": repo.name, "full_name": repo.full_name},
        }

    def _comment_json(self, repo: _Repo, c: _Comment) -> Json:
        api = f"{self._api_base()}/repos/{repo.full_name}"
        url = f"{api}/issues/comments/{c.id}"
        kind = "pull" if repo.items[c.number].is_pull else "issues"
        return {
            "id": c.id,
            "node_id": _node_id("IC", c.id),
            "url": url,
            "html_url": f"{self.html_url}/{repo.full_name}/{kind}/{c.number}#issuecomment-{c.id}",
            "issue_url": f"{api}/issues/{c.number}",
            "body": c.body,
            "user": self._user_json(c.author),
            "created_at": iso(c.created_at),
            "updated_at": iso(c.updated_at),
            "author_association": self._association(repo, c.author),
            "reactions": self._reactions_summary(repo, ("comment", c.id), url),
        }

    def _review_json(self, repo: _Repo, rv: _Review) -> Json:
        html = f"{self.html_url}/{repo.full_name}/pull/{rv.number}"
        return {
            "id": rv.id,
            "node_id": _node_id("PRR", rv.id),
            "user": self._user_json(rv.author),
            "body": rv.body,
            "state": rv.state,
            "html_url": f"{html}#pullrequestreview-{rv.id}",
            "pull_request_url": f"{self._api_base()}/repos/{repo.full_name}/pulls/{rv.number}",
            "submitted_at": iso(rv.submitted_at),
            "commit_id": "0" * 40,
            "author_association": self._association(repo, rv.author),
        }

    def _review_comment_json(self, repo: _Repo, rc: _ReviewComment) -> Json:
        api = f"{self._api_base()}/repos/{repo.full_name}"
        html = f"{self.html_url}/{repo.full_name}/pull/{rc.number}"
        data: Json = {
            "id": rc.id,
            "node_id": _node_id("PRRC", rc.id),
            "url": f"{api}/pulls/comments/{rc.id}",
            "pull_request_review_id": rc.review_id,
            "diff_hunk": "@@ -1 +1 @@",
            "path": rc.path,
            "line": rc.line,
            "side": "RIGHT",
            "commit_id": "0" * 40,
            "user": self._user_json(rc.author),
            "body": rc.body,
            "created_at": iso(rc.created_at),
            "updated_at": iso(rc.updated_at),
            "html_url": f"{html}#discussion_r{rc.id}",
            "pull_request_url": f"{api}/pulls/{rc.number}",
            "author_association": self._association(repo, rc.author),
        }
        if rc.in_reply_to is not None:
            data["in_reply_to_id"] = rc.in_reply_to
        return data

    # -- serving -------------------------------------------------------------------------------

    def _serve(self, h: BaseHTTPRequestHandler) -> None:
        req = self._parse(h)
        try:
            reply = self._respond(req)
        except _Fail as fail:
            reply = self._error(fail.status, fail.message, **fail.extra)
        self._add_rate_headers(reply)
        self._record(req, reply)
        _send(h, reply)

    def _parse(self, h: BaseHTTPRequestHandler) -> _Incoming:
        parts = urlsplit(h.path)
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        path = parts.path
        in_prefix = not self.prefix or path == self.prefix or path.startswith(self.prefix + "/")
        if path == self.graphql_path:
            path, in_prefix = "/graphql", True
        elif in_prefix:
            path = path[len(self.prefix) :] or "/"
        return _Incoming(
            method=h.command,
            path=path,
            query=dict(parse_qsl(parts.query)),
            headers={k.lower(): v for k, v in h.headers.items()},
            raw_body=raw,
            in_prefix=in_prefix,
        )

    def _respond(self, req: _Incoming) -> _Reply:
        if not req.in_prefix:
            raise _Fail(404, "Not Found")
        fault = self._take_fault(req.path)
        if fault is not None and fault.kind == "hang":
            self._stopping.wait(fault.seconds)
        elif fault is not None and fault.kind == "status":
            return self._error(fault.status, "Server Error" if fault.status >= 500 else "Error")
        login = self._authenticate(req)
        resource = "graphql" if req.path == "/graphql" else "core"
        if req.path == "/rate_limit" and req.method == "GET":
            return _Reply(200, self._rate_limit_json())
        limited = self._primary_limited(resource)
        if limited is not None:
            limited.resource = resource
            return limited
        if fault is not None and fault.kind == "secondary":
            return self._secondary(fault)
        reply = self._route(req, login)
        reply.resource, reply.cost = resource, True
        if req.method == "GET" and reply.status == 200:
            self._conditional(req, reply)
        with self._lock:
            if reply.cost:
                self._window(resource).used += 1
        return reply

    def _authenticate(self, req: _Incoming) -> str:
        header = req.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if not header:
            raise _Fail(401, "Requires authentication")
        with self._lock:
            login = (
                self._tokens.get(token.strip()) if scheme.lower() in {"bearer", "token"} else None
            )
        if login is None:
            raise _Fail(401, "Bad credentials")
        return login

    def _primary_limited(self, resource: str) -> _Reply | None:
        """The answer when RESOURCE's primary limit is used up: REST 403, GraphQL 200 + errors."""
        with self._lock:
            w = self._window(resource)
            if w.used < w.limit:
                return None
            uid = self._user_ids.setdefault(self.login, 5000 + len(self._user_ids))
        message = (
            f"API rate limit exceeded for user ID {uid}. If you reach out to GitHub Support "
            "for help, please include the request ID."
        )
        if resource == "graphql":
            return _Reply(200, {"errors": [{"type": "RATE_LIMITED", "message": message}]})
        return self._error(403, message)

    def _secondary(self, fault: _Fault) -> _Reply:
        reply = self._error(
            fault.status,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you "
            "try again.",
        )
        if fault.seconds >= 0:
            reply.headers["Retry-After"] = str(int(fault.seconds))
        return reply

    def _conditional(self, req: _Incoming, reply: _Reply) -> None:
        body = _encode(reply.body)
        tag = '"' + hashlib.sha256(body).hexdigest()[:40] + '"'
        reply.headers["ETag"] = f"W/{tag}" if self.weak_etags else tag
        reply.headers["Cache-Control"] = "private, max-age=60, s-maxage=60"
        reply.headers["Vary"] = "Accept, Authorization, Cookie, X-GitHub-OTP"
        wanted = req.headers.get("if-none-match")
        if wanted is None:
            return
        tags = {t.strip().removeprefix("W/") for t in wanted.split(",")}
        if "*" in tags or tag in tags:
            reply.status, reply.body, reply.cost = 304, None, False

    def _add_rate_headers(self, reply: _Reply) -> None:
        with self._lock:
            w = self._window(reply.resource)
            reply.headers.update(
                {
                    "X-RateLimit-Limit": str(w.limit),
                    "X-RateLimit-Remaining": str(max(0, w.limit - w.used)),
                    "X-RateLimit-Used": str(min(w.used, w.limit)),
                    "X-RateLimit-Reset": str(w.reset),
                    "X-RateLimit-Resource": reply.resource,
                }
            )

    def _error(self, status: int, message: str, **extra: Any) -> _Reply:
        body: Json = {"message": message, **extra, "documentation_url": DOCS, "status": str(status)}
        return _Reply(status, body)

    def _rate_limit_json(self) -> Json:
        with self._lock:
            resources = {}
            for name in self._windows:
                w = self._window(name)
                resources[name] = {
                    "limit": w.limit,
                    "used": min(w.used, w.limit),
                    "remaining": max(0, w.limit - w.used),
                    "reset": w.reset,
                }
            return {"resources": resources, "rate": resources["core"]}

    # -- routing -------------------------------------------------------------------------------

    def _route(self, req: _Incoming, login: str) -> _Reply:
        for method, pattern, handler in _ROUTES:
            m = pattern.fullmatch(req.path)
            if m and method == req.method:
                with self._lock:
                    return handler(self, req, login, m.groupdict())
        raise _Fail(404, "Not Found")

    def _paginate(self, req: _Incoming, items: list[Json]) -> _Reply:
        per_page = min(max(_int(req.query.get("per_page"), 30), 1), 100)
        page = max(_int(req.query.get("page"), 1), 1)
        last = max(1, -(-len(items) // per_page))
        reply = _Reply(200, items[(page - 1) * per_page : page * per_page])
        links = []
        if page > 1:
            links.append((page - 1, "prev"))
        if page < last:
            links += [(page + 1, "next"), (last, "last")]
        if page > 1:
            links.append((1, "first"))
        if links:
            reply.headers["Link"] = ", ".join(
                f'<{self._page_url(req, p)}>; rel="{rel}"' for p, rel in links
            )
        return reply

    def _page_url(self, req: _Incoming, page: int) -> str:
        query = {**req.query, "page": str(page)}
        return f"{self.api_url}{req.path}?{urlencode(query)}"

    def _get_user(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        return _Reply(200, self._user_json(login))

    def _list_issues(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        repo = self._repo(f"{g['o']}/{g['r']}")
        q = req.query
        state = q.get("state", "open")
        wanted = {x.strip().lower() for x in q.get("labels", "").split(",") if x.strip()}
        since = _parse_since(q["since"]) if "since" in q else None
        items = [
            i
            for i in repo.items.values()
            if (state == "all" or i.state == state)
            and wanted <= {x.lower() for x in i.labels}
            and (since is None or i.updated_at >= since)
        ]
        key: Callable[[_Item], tuple[int, int]] = {
            "updated": lambda i: (i.updated_at, i.id),
            "comments": lambda i: (i.comments, i.id),
        }.get(q.get("sort", "created"), lambda i: (i.created_at, i.id))
        items.sort(key=key, reverse=q.get("direction", "desc") != "asc")
        return self._paginate(req, [self._issue_json(repo, i) for i in items])

    def _get_issue(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        return _Reply(200, self._issue_json(self._repo(full), self._item(full, int(g["n"]))))

    def _get_pull(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        return _Reply(200, self._pull_json(self._repo(full), self._pull(full, int(g["n"]))))

    def _list_item_comments(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        repo, number = self._repo(full), self._item(full, int(g["n"])).number
        found = [c for c in repo.comments.values() if c.number == number]
        found = _since(found, req.query, lambda c: c.updated_at)
        return self._paginate(req, [self._comment_json(repo, c) for c in found])

    def _list_repo_comments(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        repo = self._repo(f"{g['o']}/{g['r']}")
        found = _sorted(list(repo.comments.values()), req.query)
        found = _since(found, req.query, lambda c: c.updated_at)
        return self._paginate(req, [self._comment_json(repo, c) for c in found])

    def _get_comment(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        repo = self._repo(f"{g['o']}/{g['r']}")
        c = repo.comments.get(int(g["id"]))
        if c is None:
            raise _Fail(404, "Not Found")
        return _Reply(200, self._comment_json(repo, c))

    def _list_reviews(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        repo, number = self._repo(full), self._pull(full, int(g["n"])).number
        found = [rv for rv in repo.reviews.values() if rv.number == number]
        return self._paginate(req, [self._review_json(repo, rv) for rv in found])

    def _list_pull_review_comments(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        repo, number = self._repo(full), self._pull(full, int(g["n"])).number
        found = _sorted([c for c in repo.review_comments.values() if c.number == number], req.query)
        found = _since(found, req.query, lambda c: c.updated_at)
        return self._paginate(req, [self._review_comment_json(repo, c) for c in found])

    def _list_repo_review_comments(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        repo = self._repo(f"{g['o']}/{g['r']}")
        found = _sorted(list(repo.review_comments.values()), req.query)
        found = _since(found, req.query, lambda c: c.updated_at)
        return self._paginate(req, [self._review_comment_json(repo, c) for c in found])

    def _post_comment(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        repo, item = self._repo(full), self._item(full, int(g["n"]))
        body = _json_body(req).get("body")
        if not isinstance(body, str) or not body:
            raise _Fail(422, 'Invalid request.\n\n"body" wasn\'t supplied.')
        cid = self.add_comment(full, item.number, body, author=login)
        data = self._comment_json(repo, repo.comments[cid])
        return _Reply(201, data, {"Location": data["url"]})

    def _post_item_reaction(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        full = f"{g['o']}/{g['r']}"
        item = self._item(full, int(g["n"]))
        return self._react(self._repo(full), ("issue", item.number), req, login)

    def _post_comment_reaction(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        repo = self._repo(f"{g['o']}/{g['r']}")
        if int(g["id"]) not in repo.comments:
            raise _Fail(404, "Not Found")
        return self._react(repo, ("comment", int(g["id"])), req, login)

    def _react(self, repo: _Repo, key: tuple[str, int], req: _Incoming, login: str) -> _Reply:
        content = _json_body(req).get("content")
        if content not in REACTIONS:
            raise _Fail(
                422,
                "Validation Failed",
                errors=[
                    {
                        "resource": "Reaction",
                        "code": "custom",
                        "field": "content",
                        "message": f"content {content!r} is not a valid reaction",
                    }
                ],
            )
        found = repo.reactions.setdefault(key, [])
        for x in found:
            if x.user == login and x.content == content:
                return _Reply(200, self._reaction_json(x))
        reaction = _Reaction(next(self._ids), login, str(content), self.now())
        found.append(reaction)
        return _Reply(201, self._reaction_json(reaction))

    def _graphql(self, req: _Incoming, login: str, g: dict[str, str]) -> _Reply:
        payload = _json_body(req)
        query = str(payload.get("query") or "")
        variables = payload.get("variables") or {}
        if "closingIssuesReferences" not in query or "pullRequest" not in query:
            return _Reply(200, {"errors": [{"message": "fake GitHub: unsupported GraphQL query"}]})
        owner = _gql_arg(query, variables, "repository", "owner")
        name = _gql_arg(query, variables, "repository", "name")
        number = _gql_arg(query, variables, "pullRequest", "number")
        first = _gql_arg(query, variables, "closingIssuesReferences", "first")
        repo = self._repos.get(f"{owner}/{name}".lower())
        if repo is None:
            return _Reply(200, _gql_not_found("repository", f"{owner}/{name}"))
        item = repo.items.get(_int(number, 0))
        if item is None or not item.is_pull:
            return _Reply(200, _gql_not_found("pullRequest", str(number), repo=True))
        refs = self._closing_refs(repo.full_name, item)[: _int(first, 100)]
        nodes = [
            {"number": n, "repository": {"nameWithOwner": self._full(full)}} for full, n in refs
        ]
        data = {"repository": {"pullRequest": {"closingIssuesReferences": {"nodes": nodes}}}}
        return _Reply(200, {"data": data})


_Handler_t = Callable[[FakeGitHub, _Incoming, str, dict[str, str]], _Reply]
_REPO = r"/repos/(?P<o>[^/]+)/(?P<r>[^/]+)"
_ROUTES: list[tuple[str, re.Pattern[str], _Handler_t]] = [
    ("GET", re.compile(r"/user"), FakeGitHub._get_user),
    ("POST", re.compile(r"/graphql"), FakeGitHub._graphql),
    ("GET", re.compile(_REPO + r"/issues"), FakeGitHub._list_issues),
    ("GET", re.compile(_REPO + r"/issues/comments"), FakeGitHub._list_repo_comments),
    ("GET", re.compile(_REPO + r"/issues/comments/(?P<id>\d+)"), FakeGitHub._get_comment),
    (
        "POST",
        re.compile(_REPO + r"/issues/comments/(?P<id>\d+)/reactions"),
        FakeGitHub._post_comment_reaction,
    ),
    ("GET", re.compile(_REPO + r"/issues/(?P<n>\d+)"), FakeGitHub._get_issue),
    ("GET", re.compile(_REPO + r"/issues/(?P<n>\d+)/comments"), FakeGitHub._list_item_comments),
    ("POST", re.compile(_REPO + r"/issues/(?P<n>\d+)/comments"), FakeGitHub._post_comment),
    ("POST", re.compile(_REPO + r"/issues/(?P<n>\d+)/reactions"), FakeGitHub._post_item_reaction),
    ("GET", re.compile(_REPO + r"/pulls/comments"), FakeGitHub._list_repo_review_comments),
    ("GET", re.compile(_REPO + r"/pulls/(?P<n>\d+)"), FakeGitHub._get_pull),
    ("GET", re.compile(_REPO + r"/pulls/(?P<n>\d+)/reviews"), FakeGitHub._list_reviews),
    (
        "GET",
        re.compile(_REPO + r"/pulls/(?P<n>\d+)/comments"),
        FakeGitHub._list_pull_review_comments,
    ),
]


# ---------------------------------------------------------------------------------------------
# helpers


def _int(value: object, default: int) -> int:
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return default


def _json_body(req: _Incoming) -> Json:
    try:
        data = req.json()
    except ValueError:
        raise _Fail(400, "Problems parsing JSON") from None
    if not isinstance(data, dict):
        raise _Fail(400, "Problems parsing JSON")
    return data


def _since(found: list[Any], query: dict[str, str], stamp: Callable[[Any], int]) -> list[Any]:
    if "since" not in query:
        return found
    since = _parse_since(query["since"])
    return [x for x in found if stamp(x) >= since]


def _sorted(found: list[Any], query: dict[str, str]) -> list[Any]:
    """Sort comments: ``sort`` created (default) or updated; ``direction`` asc by default."""
    if query.get("sort") == "updated":
        found.sort(key=lambda c: (c.updated_at, c.id))
    else:
        found.sort(key=lambda c: c.id)
    if "sort" in query and query.get("direction") == "desc":
        found.reverse()
    return found


def _gql_arg(query: str, variables: Json, field_name: str, arg: str) -> Any:
    """The literal or ``$variable`` value of ARG in ``FIELD(…ARG: value…)``, or None."""
    m = re.search(field_name + r"\s*\(([^)]*)\)", query)
    if m is None:
        return None
    a = re.search(r"\b" + arg + r'\s*:\s*(\$\w+|"[^"]*"|\d+)', m.group(1))
    if a is None:
        return None
    token = a.group(1)
    if token.startswith("$"):
        return variables.get(token[1:])
    return token.strip('"') if token.startswith('"') else int(token)


def _gql_not_found(kind: str, name: str, *, repo: bool = False) -> Json:
    data: Json = {"repository": {"pullRequest": None}} if repo else {"repository": None}
    message = f"Could not resolve to a {kind} with the name '{name}'."
    if kind == "pullRequest":
        message = f"Could not resolve to a PullRequest with the number of {name}."
    return {"data": data, "errors": [{"type": "NOT_FOUND", "message": message}]}


def _encode(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()


def _send(h: BaseHTTPRequestHandler, reply: _Reply) -> None:
    payload = b"" if reply.status == 304 or reply.body is None else _encode(reply.body)
    try:
        h.send_response(reply.status)
        if payload:
            h.send_header("Content-Type", "application/json; charset=utf-8")
        h.send_header("Content-Length", str(len(payload)))
        h.send_header("X-GitHub-Media-Type", "github.v3; format=json")
        for name, value in reply.headers.items():
            h.send_header(name, value)
        h.end_headers()
        h.wfile.write(payload)
        h.wfile.flush()
    except OSError:  # the client gave up (a timeout test): nothing to answer to
        h.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self, addr: tuple[str, int], handler: type[BaseHTTPRequestHandler], fake: FakeGitHub
    ) -> None:
        self.fake = fake
        self._conns: set[socket.socket] = set()
        self._conns_lock = threading.Lock()
        super().__init__(addr, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._conns_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._conns_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def close_all(self) -> None:
        """Shut down every open connection, so pooled clients see the server gone."""
        with self._conns_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # like a real server: no 40 ms delayed-ACK stalls
    server_version = "FakeGitHub/1.0"
    timeout = 30
    server: _Server

    def do_GET(self) -> None:
        self.server.fake._serve(self)

    do_POST = do_PATCH = do_PUT = do_DELETE = do_GET

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass
