"""Parse GitHub webhook payloads into provider-neutral work events. Pure: no I/O.

``parse_webhook`` understands the nine event types that can name a work item
(``SUPPORTED_EVENTS``). Its three outcomes let a caller tell them apart:

- a ``WorkEvent`` of a routable kind, naming its work items;
- a ``WorkEvent`` of kind ``unsupported`` (``ping``, ``push``, any type it does not know): a
  well-formed delivery that can never name a work item, to acknowledge and ignore; or of kind
  ``other`` (a known type with an action nothing routes, such as ``edited``);
- ``BadInput`` for a payload of a supported type that is malformed or cannot name the item it
  is about (a permanent failure: record it once, do not retry).

The work items of a pull request are its linked issues (``github.links``) followed by itself;
``excerpt`` holds the allow-listed payload fields of ``github.excerpt``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from the_loop.config import DEFAULT_WEBHOOK_EVENTS
from the_loop.errors import BadInput
from the_loop.github.excerpt import EXCERPTS, Payload, is_mapping, payload_excerpt
from the_loop.github.links import branch_issue, linked_issues, positive_int, unique_refs
from the_loop.refs import DEFAULT_HOST, HOST_RE, WorkItemRef, validate_owner_repo
from the_loop.work import WorkEvent, WorkKind

SUPPORTED_EVENTS: frozenset[str] = frozenset(DEFAULT_WEBHOOK_EVENTS)
CI_EVENTS: frozenset[str] = frozenset({"workflow_run", "check_run", "check_suite", "status"})
MAX_DELIVERY_ID = 200


_ITEM_ACTIONS = {
    "opened": WorkKind.OPENED,
    "closed": WorkKind.CLOSED,
    "reopened": WorkKind.REOPENED,
    "labeled": WorkKind.LABELED,
}
_STATUS_CONCLUSIONS = {"success": "success", "failure": "failure", "error": "failure"}


def parse_webhook(
    event_name: str, payload: Payload, delivery_id: str, host: str = DEFAULT_HOST
) -> WorkEvent:
    """Turn one webhook delivery into a ``WorkEvent``; never does I/O.

    EVENT_NAME is ``X-GitHub-Event``, DELIVERY_ID is ``X-GitHub-Delivery`` (or a poller's
    synthetic id), HOST the GitHub host refs are written for. Raises ``BadInput`` for a blank
    name or id, a bad host, a payload that is not an object, or a supported event whose payload
    is malformed or cannot name its work item; never raises anything else. An unknown event
    type yields kind ``unsupported`` with no items.
    """
    name, host = _event_name(event_name), _host(host)
    delivery_id = _delivery_id(delivery_id)
    if not is_mapping(payload):
        raise BadInput(f"{name} delivery {delivery_id}: the payload is not a JSON object")
    parser = _PARSERS.get(name)
    if parser is None:
        return _unsupported(name, payload, delivery_id, host)
    owner, repo = _repository(name, payload)
    actor, is_bot = _sender(name, payload, required=name not in CI_EVENTS)
    action = payload.get("action")
    delivery = _Delivery(
        name=name,
        action=action if isinstance(action, str) else None,
        payload=payload,
        delivery_id=delivery_id,
        host=host,
        owner=owner,
        repo=repo,
        actor=actor,
        actor_is_bot=is_bot,
    )
    return parser(delivery)


# --- the delivery and its items -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Delivery:
    name: str
    action: str | None
    payload: Payload
    delivery_id: str
    host: str
    owner: str
    repo: str
    actor: str
    actor_is_bot: bool

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.repo}"

    def ref(self, number: int) -> WorkItemRef:
        return WorkItemRef(self.owner, self.repo, number, self.host)


@dataclass(frozen=True, slots=True)
class _Item:
    ref: WorkItemRef
    is_pr: bool
    title: str | None
    body: str | None
    url: str | None
    closed: bool
    labels: tuple[str, ...]
    links: tuple[WorkItemRef, ...]
    merged: bool | None


def _issue_item(d: _Delivery, issue: Payload) -> _Item:
    """An ``issue`` object; one with ``pull_request`` set is the pull request it stands for
    (its body is the pull request's body, its head branch is not in the payload)."""
    ref = d.ref(_number(issue, f"{d.name}: issue"))
    is_pr = is_mapping(issue.get("pull_request"))
    body = _text(issue, "body")
    return _Item(
        ref=ref,
        is_pr=is_pr,
        title=_text(issue, "title"),
        body=body,
        url=_text(issue, "html_url"),
        closed=issue.get("state") == "closed",
        labels=_labels(issue.get("labels")),
        links=linked_issues(ref, body, None) if is_pr else (),
        merged=None,
    )


def _pr_item(d: _Delivery, pr: Payload) -> _Item:
    """A ``pull_request`` object, with its linked issues."""
    ref = d.ref(_number(pr, f"{d.name}: pull_request"))
    head_ref = _text(pr.get("head"), "ref")
    body = _text(pr, "body")
    merged = pr.get("merged")
    closing = pr.get("closingIssuesReferences", pr.get("closing_issues_references"))
    return _Item(
        ref=ref,
        is_pr=True,
        title=_text(pr, "title"),
        body=body,
        url=_text(pr, "html_url"),
        closed=pr.get("state") == "closed",
        labels=_labels(pr.get("labels")),
        links=linked_issues(ref, body, head_ref, closing),
        merged=merged if isinstance(merged, bool) else None,
    )


def _event(
    d: _Delivery,
    kind: WorkKind,
    item: _Item,
    *,
    body: str | None = None,
    url: str | None = None,
    source: tuple[str, Payload] | None = None,
) -> WorkEvent:
    """The work event about ITEM: its linked issues first, then ITEM itself. SOURCE is the
    kind and the object of an authored comment or review: its GitHub id, when the object has
    a positive integer one, becomes the event's ``source_id`` (``<kind>-<id>``)."""
    return WorkEvent(
        kind=kind,
        event_name=d.name,
        action=d.action,
        delivery_id=d.delivery_id,
        actor=d.actor,
        actor_is_bot=d.actor_is_bot,
        host=d.host,
        repository=d.full_name,
        items=(*item.links, item.ref),
        own=item.ref,
        own_is_pull_request=item.is_pr,
        body=body,
        url=url or item.url,
        title=item.title,
        item_url=item.url,
        item_body=item.body,
        item_closed=item.closed,
        merged=item.merged if kind is WorkKind.CLOSED and item.is_pr else None,
        labels=item.labels,
        label=_added_label(d) if kind is WorkKind.LABELED else None,
        excerpt=payload_excerpt(d.payload, EXCERPTS[d.name]),
        source_id=_source_id(source) if kind in _AUTHORED_OBJECTS else None,
    )


_AUTHORED_OBJECTS = frozenset({WorkKind.COMMENT, WorkKind.REVIEW, WorkKind.REVIEW_COMMENT})


def _source_id(source: tuple[str, Payload] | None) -> str | None:
    if source is None:
        return None
    kind, obj = source
    ident = obj.get("id")
    if type(ident) is not int or ident <= 0:
        return None
    return f"{kind}-{ident}"


# --- one parser per event type --------------------------------------------------------------


def _parse_issues(d: _Delivery) -> WorkEvent:
    item = _issue_item(d, _obj(d.payload, "issue", d.name))
    kind = _ITEM_ACTIONS.get(d.action or "", WorkKind.OTHER)
    return _event(d, kind, item, body=item.body if kind is WorkKind.OPENED else None)


def _parse_issue_comment(d: _Delivery) -> WorkEvent:
    item = _issue_item(d, _obj(d.payload, "issue", d.name))
    comment = _obj(d.payload, "comment", d.name)
    kind = WorkKind.COMMENT if d.action == "created" else WorkKind.OTHER
    return _event(
        d,
        kind,
        item,
        body=_text(comment, "body"),
        url=_text(comment, "html_url"),
        source=("comment", comment),
    )


def _parse_pull_request(d: _Delivery) -> WorkEvent:
    item = _pr_item(d, _obj(d.payload, "pull_request", d.name))
    kind = _ITEM_ACTIONS.get(d.action or "", WorkKind.OTHER)
    return _event(d, kind, item, body=item.body if kind is WorkKind.OPENED else None)


def _parse_review(d: _Delivery) -> WorkEvent:
    item = _pr_item(d, _obj(d.payload, "pull_request", d.name))
    review = _obj(d.payload, "review", d.name)
    kind = WorkKind.REVIEW if d.action == "submitted" else WorkKind.OTHER
    return _event(
        d,
        kind,
        item,
        body=_text(review, "body"),
        url=_text(review, "html_url"),
        source=("review", review),
    )


def _parse_review_comment(d: _Delivery) -> WorkEvent:
    item = _pr_item(d, _obj(d.payload, "pull_request", d.name))
    comment = _obj(d.payload, "comment", d.name)
    kind = WorkKind.REVIEW_COMMENT if d.action == "created" else WorkKind.OTHER
    return _event(
        d,
        kind,
        item,
        body=_text(comment, "body"),
        url=_text(comment, "html_url"),
        source=("review-comment", comment),
    )


def _parse_workflow_run(d: _Delivery) -> WorkEvent:
    run = _obj(d.payload, "workflow_run", d.name)
    return _ci_event(
        d, run, run.get("pull_requests"), [_text(run, "head_branch")], _text(run, "html_url")
    )


def _ci_run_key(d: _Delivery, run: Payload, conclusion: str | None) -> str | None:
    """What makes one CI outcome: the run's id, its attempt and its conclusion (a replay of the
    same outcome under a new delivery id has the same key); None without an integer id."""
    ident, attempt = run.get("id"), run.get("run_attempt", 1)
    if type(ident) is not int or type(attempt) is not int:
        return None
    return f"ci-{d.name}-{ident}-{attempt}-{conclusion or 'none'}"


def _parse_check_run(d: _Delivery) -> WorkEvent:
    run = _obj(d.payload, "check_run", d.name)
    branch = _text(run.get("check_suite"), "head_branch")
    return _ci_event(d, run, run.get("pull_requests"), [branch], _text(run, "html_url"))


def _parse_check_suite(d: _Delivery) -> WorkEvent:
    suite = _obj(d.payload, "check_suite", d.name)
    return _ci_event(d, suite, suite.get("pull_requests"), [_text(suite, "head_branch")], None)


def _parse_status(d: _Delivery) -> WorkEvent:
    state = d.payload.get("state")
    if not isinstance(state, str):
        raise BadInput(f"{d.name}: payload.state is missing or not a string")
    branches = d.payload.get("branches")
    names = [_text(b, "name") for b in branches] if isinstance(branches, list) else []
    found = _ci_items(d, [], names)
    return _build_ci(d, found, _text(d.payload, "target_url"), _STATUS_CONCLUSIONS.get(state))


def _ci_event(
    d: _Delivery,
    run: Payload,
    pull_requests: object,
    branches: list[str | None],
    url: str | None,
) -> WorkEvent:
    """A workflow run, check run or check suite: the conclusion counts only once completed."""
    conclusion = _text(run, "conclusion") if d.action == "completed" else None
    found = _ci_items(d, _ci_pull_requests(d, pull_requests), branches)
    return _build_ci(d, found, url, conclusion, _ci_run_key(d, run, conclusion))


def _build_ci(
    d: _Delivery,
    found: tuple[tuple[WorkItemRef, ...], WorkItemRef | None, bool],
    url: str | None,
    conclusion: str | None,
    run_key: str | None = None,
) -> WorkEvent:
    items, own, own_is_pr = found
    return WorkEvent(
        kind=WorkKind.CI,
        event_name=d.name,
        action=d.action,
        delivery_id=d.delivery_id,
        actor=d.actor,
        actor_is_bot=d.actor_is_bot,
        host=d.host,
        repository=d.full_name,
        items=items,
        own=own,
        own_is_pull_request=own_is_pr,
        url=url,
        conclusion=conclusion,
        excerpt=payload_excerpt(d.payload, EXCERPTS[d.name]),
        source_id=run_key,
    )


def _ci_items(
    d: _Delivery, prs: list[tuple[WorkItemRef, str | None]], branches: Iterable[str | None]
) -> tuple[tuple[WorkItemRef, ...], WorkItemRef | None, bool]:
    """(items, own item, own is a pull request): per pull request its branch-linked issue then
    itself; with no pull request, the issues the run's branches name. The own item is the first
    pull request, else the first issue."""
    if prs:
        found = [
            ref for pr, head in prs for ref in (branch_issue(head, d.owner, d.repo, d.host), pr)
        ]
        return unique_refs(found), prs[0][0], True
    items = unique_refs(branch_issue(b, d.owner, d.repo, d.host) for b in branches)
    return items, (items[0] if items else None), False


def _ci_pull_requests(d: _Delivery, value: object) -> list[tuple[WorkItemRef, str | None]]:
    """The (pull request, head branch) pairs of a CI payload's ``pull_requests`` of this
    repository. GitHub lists pull requests of other repositories sharing the head commit;
    those, and entries without a usable number, are skipped."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadInput(f"{d.name}: pull_requests is not a list")
    out: list[tuple[WorkItemRef, str | None]] = []
    for entry in value:
        if not is_mapping(entry) or not _same_repo(d, entry):
            continue
        number = entry.get("number")
        if positive_int(number):
            out.append((d.ref(number), _text(entry.get("head"), "ref")))
    return out


def _same_repo(d: _Delivery, entry: Payload) -> bool:
    base = entry.get("base")
    base_repo = base.get("repo") if is_mapping(base) else None
    repository = d.payload.get("repository")
    if not is_mapping(base_repo) or not is_mapping(repository):
        return True
    base_id, repo_id = base_repo.get("id"), repository.get("id")
    if isinstance(base_id, int) and isinstance(repo_id, int):
        return base_id == repo_id
    base_name = base_repo.get("name")
    return not isinstance(base_name, str) or base_name.lower() == d.repo.lower()


_PARSERS: dict[str, Callable[[_Delivery], WorkEvent]] = {
    "issues": _parse_issues,
    "issue_comment": _parse_issue_comment,
    "pull_request": _parse_pull_request,
    "pull_request_review": _parse_review,
    "pull_request_review_comment": _parse_review_comment,
    "workflow_run": _parse_workflow_run,
    "check_run": _parse_check_run,
    "check_suite": _parse_check_suite,
    "status": _parse_status,
}


def _unsupported(name: str, payload: Payload, delivery_id: str, host: str) -> WorkEvent:
    """A well-formed delivery of a type that cannot name a work item: nothing is required."""
    actor, is_bot = _sender(name, payload, required=False)
    repository = payload.get("repository")
    full_name = repository.get("full_name") if is_mapping(repository) else None
    action = payload.get("action")
    return WorkEvent(
        kind=WorkKind.UNSUPPORTED,
        event_name=name,
        action=action if isinstance(action, str) else None,
        delivery_id=delivery_id,
        actor=actor,
        actor_is_bot=is_bot,
        host=host,
        repository=full_name if isinstance(full_name, str) else None,
        items=(),
        own=None,
    )


# --- links ----------------------------------------------------------------------------------


# --- small readers --------------------------------------------------------------------------


def _event_name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 100:
        raise BadInput("missing or invalid event name (X-GitHub-Event)")
    return value.strip()


def _delivery_id(value: object) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value) > MAX_DELIVERY_ID
        or not value.isprintable()
    ):
        raise BadInput("missing or invalid delivery id (X-GitHub-Delivery)")
    return value.strip()


def _host(value: object) -> str:
    if not isinstance(value, str) or not HOST_RE.match(value):
        raise BadInput(f"invalid GitHub host {value!r}")
    return value.lower()


def _repository(name: str, payload: Payload) -> tuple[str, str]:
    """``OWNER``, ``REPO`` of the payload's repository, in lower case (GitHub's names are
    case-insensitive; refs keep them in lower case)."""
    repository = payload.get("repository")
    full_name = repository.get("full_name") if is_mapping(repository) else None
    if not isinstance(full_name, str):
        raise BadInput(f"{name}: payload.repository.full_name is missing: cannot name a work item")
    try:
        owner, repo = validate_owner_repo(full_name)
    except BadInput as exc:
        raise BadInput(f"{name}: payload.repository.full_name: {exc}") from None
    return owner.lower(), repo.lower()


def _sender(name: str, payload: Payload, *, required: bool) -> tuple[str, bool]:
    """(login, is a bot) of ``sender``; ``("", False)`` when absent and not REQUIRED."""
    sender = payload.get("sender")
    login = sender.get("login") if is_mapping(sender) else None
    if not is_mapping(sender) or not isinstance(login, str) or not login.strip():
        if required:
            raise BadInput(f"{name}: payload.sender.login is missing: cannot tell who acted")
        return "", False
    return login, is_bot(login, sender.get("type"))


def is_bot(login: str, kind: object) -> bool:
    """True for a GitHub account of type ``Bot``, or a login ending in ``[bot]``."""
    return kind == "Bot" or login.endswith("[bot]")


def _obj(payload: Payload, key: str, name: str) -> Payload:
    value = payload.get(key)
    if not is_mapping(value):
        raise BadInput(f"{name}: payload.{key} is missing or not an object")
    return value


def _number(obj: Payload, where: str) -> int:
    number = obj.get("number")
    if not positive_int(number):
        raise BadInput(
            f"{where}.number is missing or not a positive integer: cannot name a work item"
        )
    return number


def _text(obj: object, key: str) -> str | None:
    value = obj.get(key) if is_mapping(obj) else None
    return value if isinstance(value, str) else None


def _labels(value: object) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    names = [_text(label, "name") if is_mapping(label) else label for label in value]
    return tuple(n for n in names if isinstance(n, str))


def _added_label(d: _Delivery) -> str | None:
    return _text(d.payload.get("label"), "name")
