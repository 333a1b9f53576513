"""The issues a pull request (or a CI run) is linked to: closing keywords, closing references
and head branches. Pure: no I/O.

Linked issues of a pull request, in order, de-duplicated, the pull request itself excluded, at
most ``MAX_LINKED_ISSUES``:

1. ``closingIssuesReferences`` when the caller has it (GraphQL ``{"nodes": [...]}`` or a plain
   list of ``{number, repository}``); webhooks do not carry it;
2. closing keywords in the body (``close``, ``closes``, ``closed``, ``fix``, ``fixes``,
   ``fixed``, ``resolve``, ``resolves``, ``resolved``; any case; an optional colon) followed by
   ``#N``, ``OWNER/REPO#N`` or ``https://HOST/OWNER/REPO/issues/N`` on the configured host;
3. the head branch: a last path segment ``issue-N`` (``issue-15``, ``fix/issue-15``), or
   the-loop's own work branch ``the-loop/<slug>`` of an item in the same repository.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TypeGuard

from the_loop.errors import BadInput
from the_loop.refs import DEFAULT_HOST, WorkItemRef

MAX_LINKED_ISSUES = 20

_CLOSING_RE = re.compile(
    r"(?<![\w-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?)(?::[ \t]*|[ \t]+)(?:"
    r"(?:(?P<owner>[A-Za-z0-9-]+)/(?P<repo>[A-Za-z0-9._-]+))?#(?P<num>[0-9]{1,10})\b"
    r"|https?://(?P<host>[A-Za-z0-9.:-]+)/(?P<url_owner>[A-Za-z0-9-]+)/"
    r"(?P<url_repo>[A-Za-z0-9._-]+)/issues/(?P<url_num>[0-9]{1,10})\b)",
    re.IGNORECASE,
)
_ISSUE_BRANCH_RE = re.compile(r"(?:^|/)issue-([0-9]{1,10})$", re.IGNORECASE)
_LOOP_BRANCH_RE = re.compile(r"^the-loop/github-.+-([0-9]{1,10})$")


def closing_keyword_refs(
    text: str | None, owner: str, repo: str, host: str = DEFAULT_HOST
) -> list[WorkItemRef]:
    """Issues named after GitHub closing keywords in TEXT, in order, de-duplicated.

    ``#N`` is in OWNER/REPO; ``OTHER/REPO#N`` names another repository on HOST; a URL counts
    only when it is on HOST. Names that break the ref grammar are skipped, never raised.
    """
    refs: list[WorkItemRef] = []
    for match in _CLOSING_RE.finditer(text or ""):
        ref = _closing_match_ref(match, owner, repo, host)
        if ref is not None and ref not in refs:
            refs.append(ref)
    return refs


def branch_issue(
    branch: str | None, owner: str, repo: str, host: str = DEFAULT_HOST
) -> WorkItemRef | None:
    """The issue a head BRANCH names in OWNER/REPO, or None.

    Recognised: a last path segment ``issue-N`` (any case), and the-loop's own work branch
    ``the-loop/<slug>`` whose slug is exactly that of ``OWNER/REPO#N``.
    """
    if not branch:
        return None
    match = _ISSUE_BRANCH_RE.search(branch)
    if match:
        return _ref_or_none(owner, repo, int(match.group(1)), host)
    match = _LOOP_BRANCH_RE.match(branch)
    if match:
        ref = _ref_or_none(owner, repo, int(match.group(1)), host)
        if ref is not None and branch == f"the-loop/{ref.slug}":
            return ref
    return None


def linked_issues(
    pr: WorkItemRef, body: str | None, head_ref: str | None, closing_references: object = None
) -> tuple[WorkItemRef, ...]:
    """The issues pull request PR closes, in the module's documented order, de-duplicated,
    without PR itself, at most ``MAX_LINKED_ISSUES``. Malformed references are skipped."""
    found = [
        *_closing_references(closing_references, pr),
        *closing_keyword_refs(body, pr.owner, pr.repo, pr.host),
        branch_issue(head_ref, pr.owner, pr.repo, pr.host),
    ]
    return unique_refs(found, exclude=pr)[:MAX_LINKED_ISSUES]


def _closing_match_ref(
    match: re.Match[str], owner: str, repo: str, host: str
) -> WorkItemRef | None:
    if match.group("num") is not None:
        other_owner, other_repo = match.group("owner"), match.group("repo")
        if other_owner is None or other_repo is None:
            return _ref_or_none(owner, repo, int(match.group("num")), host)
        return _ref_or_none(
            *_canonical(other_owner, other_repo, owner, repo), int(match.group("num")), host
        )
    if match.group("host").lower() != host:
        return None
    return _ref_or_none(
        *_canonical(match.group("url_owner"), match.group("url_repo"), owner, repo),
        int(match.group("url_num")),
        host,
    )


def _closing_references(value: object, pr: WorkItemRef) -> list[WorkItemRef | None]:
    """``closingIssuesReferences``: ``{"nodes": [...]}`` or a list of ``{number, repository}``
    nodes (``repository.nameWithOwner`` or ``full_name``; the pull request's own when absent)."""
    nodes = value.get("nodes") if isinstance(value, Mapping) else value
    if not isinstance(nodes, list):
        return []
    out: list[WorkItemRef | None] = []
    for node in nodes:
        number = node.get("number") if isinstance(node, Mapping) else None
        if isinstance(node, Mapping) and positive_int(number):
            owner, repo = _node_repository(node.get("repository"), pr)
            out.append(_ref_or_none(owner, repo, number, pr.host))
    return out


def _node_repository(repository: object, pr: WorkItemRef) -> tuple[str, str]:
    if isinstance(repository, Mapping):
        name = repository.get("nameWithOwner", repository.get("full_name"))
        if isinstance(name, str) and "/" in name:
            owner, _, repo = name.partition("/")
            return _canonical(owner, repo, pr.owner, pr.repo)
    return pr.owner, pr.repo


def _canonical(owner: str, repo: str, home_owner: str, home_repo: str) -> tuple[str, str]:
    """OWNER/REPO spelled as the home repository when they name it (GitHub ignores case)."""
    if owner.lower() == home_owner.lower() and repo.lower() == home_repo.lower():
        return home_owner, home_repo
    return owner, repo


def _ref_or_none(owner: str, repo: str, number: int, host: str) -> WorkItemRef | None:
    try:
        return WorkItemRef(owner, repo, number, host)
    except BadInput:
        return None


def unique_refs(
    refs: Iterable[WorkItemRef | None], exclude: WorkItemRef | None = None
) -> tuple[WorkItemRef, ...]:
    out: list[WorkItemRef] = []
    for ref in refs:
        if ref is not None and ref != exclude and ref not in out:
            out.append(ref)
    return tuple(out)


def positive_int(value: object) -> TypeGuard[int]:
    """True for an int (not a bool) of at least 1: a usable item number."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
