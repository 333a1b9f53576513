"""GitHub webhook payloads → work events: kinds, items and their order, links, CI, refusals."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fakes import payloads as p
from the_loop.engine import repo_allowed
from the_loop.errors import BadInput
from the_loop.github.excerpt import EXCERPT_STRING_LIMIT, EXCERPT_TOTAL_LIMIT, payload_excerpt
from the_loop.github.links import (
    MAX_LINKED_ISSUES,
    branch_issue,
    closing_keyword_refs,
    linked_issues,
)
from the_loop.github.parse import SUPPORTED_EVENTS, parse_webhook
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent, WorkKind

ISSUE = WorkItemRef("octo", "repo", 15)
PR = WorkItemRef("octo", "repo", 20)


def parse(name: str, payload: dict[str, Any], host: str = "github.com") -> WorkEvent:
    return parse_webhook(name, payload, "delivery-1", host=host)


# --- issues ---------------------------------------------------------------------------------


def test_issue_opened_names_the_issue_with_its_body_title_and_labels() -> None:
    event = parse("issues", p.issues_event("opened", body="the-loop do it", labels=["bug"]))
    assert event.kind is WorkKind.OPENED
    assert event.items == (ISSUE,) and event.own == ISSUE
    assert not event.own_is_pull_request
    assert event.body == "the-loop do it" == event.item_body
    assert event.title == "Flaky test in the scheduler"
    assert event.url == event.item_url == "https://github.com/octo/repo/issues/15"
    assert event.labels == ("bug",)
    assert event.actor == "alice" and not event.actor_is_bot
    assert event.delivery_id == "delivery-1" and event.event_name == "issues"
    assert event.repository == "octo/repo" and event.host == "github.com"
    assert event.merged is None and event.conclusion is None


@pytest.mark.parametrize(
    ("action", "kind"),
    [
        ("closed", WorkKind.CLOSED),
        ("reopened", WorkKind.REOPENED),
        ("labeled", WorkKind.LABELED),
        ("edited", WorkKind.OTHER),
        ("unlabeled", WorkKind.OTHER),
        ("assigned", WorkKind.OTHER),
    ],
)
def test_issue_actions_map_to_kinds_and_only_opened_authors_text(
    action: str, kind: WorkKind
) -> None:
    event = parse("issues", p.issues_event(action, added_label="the-loop"))
    assert event.kind is kind
    assert event.body is None
    assert event.item_body == "The scheduler test fails one run in ten."


def test_labeled_issue_carries_the_label_just_added() -> None:
    event = parse("issues", p.issues_event("labeled", added_label="the-loop", labels=["bug"]))
    assert event.label == "the-loop"
    assert event.labels == ("bug",)


def test_closed_issue_is_not_a_merge_and_reads_as_closed() -> None:
    event = parse("issues", p.issues_event("closed", state="closed"))
    assert event.kind is WorkKind.CLOSED
    assert event.merged is None
    assert event.item_closed


# --- comments -------------------------------------------------------------------------------


def test_issue_comment_carries_the_comment_body_and_link() -> None:
    event = parse("issue_comment", p.issue_comment_event("the-loop start", comment_id=1))
    assert event.kind is WorkKind.COMMENT
    assert event.body == "the-loop start"
    assert event.url == "https://github.com/octo/repo/issues/15#issuecomment-1"
    assert event.item_url == "https://github.com/octo/repo/issues/15"
    assert event.items == (ISSUE,) and event.own == ISSUE


def test_issue_comment_on_a_pull_request_concerns_the_pr_after_its_linked_issues() -> None:
    event = parse("issue_comment", p.issue_comment_event("looks good", number=20, on_pr=True))
    assert event.own == PR and event.own_is_pull_request
    assert event.items == (ISSUE, PR)
    assert event.linked == (ISSUE,)


@pytest.mark.parametrize("action", ["edited", "deleted"])
def test_edited_or_deleted_comments_are_not_routed_kinds(action: str) -> None:
    assert parse("issue_comment", p.issue_comment_event("x", action=action)).kind is (
        WorkKind.OTHER
    )


def test_comment_by_a_bot_account_is_marked_as_bot() -> None:
    payload = p.issue_comment_event("hi", sender_json=p.bot("dependabot[bot]"))
    event = parse("issue_comment", payload)
    assert event.actor == "dependabot[bot]" and event.actor_is_bot


# --- pull requests --------------------------------------------------------------------------


def test_pull_request_opened_lists_linked_issues_first_then_itself() -> None:
    event = parse("pull_request", p.pull_request_event("opened", body="Fixes #15\n\nDetails"))
    assert event.kind is WorkKind.OPENED
    assert event.items == (ISSUE, PR) and event.own == PR and event.own_is_pull_request
    assert event.body == "Fixes #15\n\nDetails"
    assert event.excerpt["pull_request.head.ref"] == "fix-scheduler"


@pytest.mark.parametrize(("merged", "expected"), [(True, True), (False, False)])
def test_pull_request_close_says_whether_it_was_merged(merged: bool, expected: bool) -> None:
    payload = p.pull_request_event("closed", merged=merged, state="closed")
    event = parse("pull_request", payload)
    assert event.kind is WorkKind.CLOSED and event.merged is expected


@pytest.mark.parametrize("action", ["synchronize", "edited", "ready_for_review", "assigned"])
def test_other_pull_request_actions_are_not_routed_kinds(action: str) -> None:
    assert parse("pull_request", p.pull_request_event(action)).kind is WorkKind.OTHER


def test_review_carries_its_body_state_and_link() -> None:
    event = parse("pull_request_review", p.review_event("Please add a test.", review_id=80))
    assert event.kind is WorkKind.REVIEW
    assert event.body == "Please add a test."
    assert event.url == "https://github.com/octo/repo/pull/20#pullrequestreview-80"
    assert event.excerpt["review.state"] == "changes_requested"
    assert event.items == (ISSUE, PR)


def test_approval_without_a_body_is_a_review_with_no_text() -> None:
    event = parse("pull_request_review", p.review_event(None, state="approved"))
    assert event.kind is WorkKind.REVIEW and event.body is None


def test_review_comment_carries_the_file_and_line() -> None:
    event = parse("pull_request_review_comment", p.review_comment_event("Off by one here."))
    assert event.kind is WorkKind.REVIEW_COMMENT
    assert event.body == "Off by one here."
    assert event.excerpt["comment.path"] == "src/scheduler.py"
    assert event.excerpt["comment.line"] == 42
    assert event.items == (ISSUE, PR)


# --- linked issues --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("Fixes #15", [ISSUE]),
        ("fixes #15", [ISSUE]),
        ("FIXED #15", [ISSUE]),
        ("Closes: #15", [ISSUE]),
        ("close #15", [ISSUE]),
        ("closed #15", [ISSUE]),
        ("Resolves #15", [ISSUE]),
        ("resolve #15 and resolved #16", [ISSUE, WorkItemRef("octo", "repo", 16)]),
        ("closes octo/repo#15", [ISSUE]),
        ("closes Octo/Repo#15", [ISSUE]),
        ("Fixes https://github.com/octo/repo/issues/15", [ISSUE]),
        ("Fixes https://github.com/octo/repo/issues/15#issuecomment-3", [ISSUE]),
        ("closes other/lib#7", [WorkItemRef("other", "lib", 7)]),
        ("Fixes #15, fixes #15 again", [ISSUE]),
        ("See #15", []),
        ("prefix #15", []),
        ("unfixes #15", []),
        ("Fixes #15abc", []),
        ("Fixes #0", []),
        ("Fixes -bad/repo#3", []),
        ("Fixes https://gitlab.com/octo/repo/issues/15", []),
        ("Fixes https://github.com/octo/repo/pull/15", []),
        ("", []),
    ],
)
def test_closing_keywords_in_a_body(body: str, expected: list[WorkItemRef]) -> None:
    assert closing_keyword_refs(body, "octo", "repo") == expected


def test_closing_keyword_urls_count_only_on_the_configured_host() -> None:
    body = "Fixes https://ghe.example.com/octo/repo/issues/3 and fixes https://github.com/octo/repo/issues/4"
    refs = closing_keyword_refs(body, "octo", "repo", host="ghe.example.com")
    assert refs == [WorkItemRef("octo", "repo", 3, host="ghe.example.com")]
    assert closing_keyword_refs(body, "octo", "repo") == [WorkItemRef("octo", "repo", 4)]


@pytest.mark.parametrize(
    ("branch", "number"),
    [
        ("issue-15", 15),
        ("Issue-15", 15),
        ("fix/issue-15", 15),
        ("alice/fix/issue-15", 15),
        ("the-loop/github-octo-repo-15", 15),
        ("issue-15-flaky", None),
        ("myissue-15", None),
        ("15-flaky-test", None),
        ("issue-", None),
        ("the-loop/github-other-lib-15", None),
        ("main", None),
        (None, None),
    ],
)
def test_head_branch_names_an_issue(branch: str | None, number: int | None) -> None:
    expected = WorkItemRef("octo", "repo", number) if number else None
    assert branch_issue(branch, "octo", "repo") == expected


def test_linked_issues_order_references_then_keywords_then_branch_deduplicated() -> None:
    refs = {
        "nodes": [
            {"number": 3, "repository": {"nameWithOwner": "octo/repo"}},
            {"number": 9, "repository": {"nameWithOwner": "other/lib"}},
        ]
    }
    found = linked_issues(PR, "Fixes #4. Also fixes #3 and closes #20", "issue-5", refs)
    assert found == (
        WorkItemRef("octo", "repo", 3),
        WorkItemRef("other", "lib", 9),
        WorkItemRef("octo", "repo", 4),
        WorkItemRef("octo", "repo", 5),
    )


def test_closing_references_accept_a_plain_list_and_skip_malformed_nodes() -> None:
    refs = [
        {"number": 3},
        {"number": "x"},
        "junk",
        {"number": -1},
        {"number": 7, "repository": {"nameWithOwner": "bad name/x"}},
    ]
    assert linked_issues(PR, None, None, refs) == (WorkItemRef("octo", "repo", 3),)


def test_pull_request_payload_with_closing_issues_references_lists_them_first() -> None:
    payload = p.pull_request_event(
        "opened", body="Fixes #16", closing_refs={"nodes": [{"number": 15}]}
    )
    assert parse("pull_request", payload).items == (ISSUE, WorkItemRef("octo", "repo", 16), PR)


def test_pull_request_from_an_issue_branch_links_the_issue() -> None:
    payload = p.pull_request_event("opened", body="No keywords here", head_ref="fix/issue-15")
    assert parse("pull_request", payload).items == (ISSUE, PR)


def test_another_repositorys_issue_in_the_body_is_linked_with_its_repository() -> None:
    payload = p.pull_request_event("opened", body="Closes octo/other#15")
    event = parse("pull_request", payload)
    assert event.items == (WorkItemRef("octo", "other", 15), PR)


def test_linked_issues_are_capped() -> None:
    body = " ".join(f"fixes #{n}" for n in range(1, 100))
    assert len(linked_issues(PR, body, None)) == MAX_LINKED_ISSUES


def test_enterprise_host_is_carried_by_every_ref() -> None:
    payload = p.pull_request_event("opened", body="Fixes #15")
    event = parse("pull_request", payload, host="GHE.example.com")
    assert event.host == "ghe.example.com"
    assert [str(ref) for ref in event.items] == [
        "github:ghe.example.com/octo/repo#15",
        "github:ghe.example.com/octo/repo#20",
    ]


# --- CI -------------------------------------------------------------------------------------


def test_workflow_run_maps_to_its_pull_requests_with_the_conclusion() -> None:
    event = parse("workflow_run", p.workflow_run_event("failure"))
    assert event.kind is WorkKind.CI
    assert event.conclusion == "failure"
    assert event.items == (PR,) and event.own == PR and event.own_is_pull_request
    assert event.url == "https://github.com/octo/repo/actions/runs/30433642"
    assert event.excerpt["workflow_run.name"] == "Build"
    assert event.body is None


def test_ci_pull_request_from_an_issue_branch_links_the_issue_first() -> None:
    payload = p.workflow_run_event(pull_requests=[p.ci_pull_request(20, "issue-15")])
    assert parse("workflow_run", payload).items == (ISSUE, PR)


def test_ci_run_not_completed_has_no_conclusion() -> None:
    event = parse("workflow_run", p.workflow_run_event(None, action="requested"))
    assert event.kind is WorkKind.CI and event.conclusion is None


def test_ci_pull_requests_of_another_repository_are_skipped() -> None:
    foreign = p.ci_pull_request(99, repo_id=42)
    payload = p.workflow_run_event(pull_requests=[foreign, p.ci_pull_request(20)])
    assert parse("workflow_run", payload).items == (PR,)


def test_ci_without_pull_requests_on_an_issue_branch_names_the_issue() -> None:
    payload = p.workflow_run_event(pull_requests=[], head_branch="issue-15")
    event = parse("workflow_run", payload)
    assert event.items == (ISSUE,) and event.own == ISSUE and not event.own_is_pull_request


def test_ci_on_a_branch_without_pull_request_names_nothing_and_is_not_an_error() -> None:
    event = parse("workflow_run", p.workflow_run_event(pull_requests=[], head_branch="main"))
    assert event.kind is WorkKind.CI
    assert event.items == () and event.own is None


def test_check_run_with_a_ghost_sender_is_parsed() -> None:
    event = parse("check_run", p.check_run_event("timed_out"))
    assert event.conclusion == "timed_out"
    assert event.items == (PR,)
    assert event.actor == "ghost"
    assert event.excerpt["check_run.output.summary"] == "Lint failed on src/scheduler.py"


def test_check_run_rerequested_carries_no_stale_conclusion() -> None:
    assert parse("check_run", p.check_run_event("failure", action="rerequested")).conclusion is (
        None
    )


def test_check_suite_maps_to_its_pull_requests() -> None:
    event = parse("check_suite", p.check_suite_event("action_required"))
    assert event.conclusion == "action_required"
    assert event.items == (PR,)
    assert event.actor_is_bot


@pytest.mark.parametrize(
    ("state", "conclusion"),
    [("failure", "failure"), ("error", "failure"), ("success", "success"), ("pending", None)],
)
def test_status_maps_its_state_to_a_conclusion(state: str, conclusion: str | None) -> None:
    event = parse("status", p.status_event(state))
    assert event.kind is WorkKind.CI and event.action is None
    assert event.conclusion == conclusion
    assert event.items == (ISSUE,)
    assert event.url == "https://ci.example.com/builds/123"


def test_status_on_an_unlinked_branch_names_nothing() -> None:
    assert parse("status", p.status_event(branches=["main"])).items == ()


def test_ci_sender_is_optional() -> None:
    payload = p.workflow_run_event()
    del payload["sender"]
    assert parse("workflow_run", payload).actor == ""


# --- unsupported types ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["ping", "push", "star", "some_future_event"])
def test_unsupported_types_are_representable_and_name_no_item(name: str) -> None:
    event = parse(name, p.ping_event())
    assert event.kind is WorkKind.UNSUPPORTED
    assert event.items == () and event.own is None
    assert event.event_name == name and event.repository == "octo/repo"


def test_an_unsupported_type_needs_nothing_in_its_payload() -> None:
    event = parse_webhook("ping", {}, "d-1")
    assert event.kind is WorkKind.UNSUPPORTED and event.actor == ""


def test_supported_events_are_the_nine_defaults() -> None:
    assert sorted(SUPPORTED_EVENTS) == sorted(
        [
            "issues",
            "issue_comment",
            "pull_request",
            "pull_request_review",
            "pull_request_review_comment",
            "workflow_run",
            "check_run",
            "check_suite",
            "status",
        ]
    )


# --- malformed ------------------------------------------------------------------------------


def _without(payload: dict[str, Any], *path: str) -> dict[str, Any]:
    out = copy.deepcopy(payload)
    node = out
    for key in path[:-1]:
        node = node[key]
    del node[path[-1]]
    return out


def _with(payload: dict[str, Any], value: Any, *path: str) -> dict[str, Any]:
    out = copy.deepcopy(payload)
    node = out
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return out


@pytest.mark.parametrize(
    ("name", "payload", "message"),
    [
        ("issues", _without(p.issues_event(), "issue"), "payload.issue is missing"),
        ("issues", _without(p.issues_event(), "issue", "number"), "issue.number"),
        ("issues", _with(p.issues_event(), "15", "issue", "number"), "issue.number"),
        ("issues", _with(p.issues_event(), True, "issue", "number"), "issue.number"),
        ("issues", _with(p.issues_event(), 0, "issue", "number"), "issue.number"),
        ("issues", _without(p.issues_event(), "repository"), "repository.full_name"),
        (
            "issues",
            _with(p.issues_event(), "no-slash", "repository", "full_name"),
            "repository.full_name",
        ),
        (
            "issues",
            _with(p.issues_event(), "-x/y", "repository", "full_name"),
            "repository.full_name",
        ),
        ("issues", _without(p.issues_event(), "sender"), "sender.login"),
        ("issue_comment", _without(p.issue_comment_event("x"), "comment"), "payload.comment"),
        ("pull_request", _with(p.pull_request_event(), [], "pull_request"), "payload.pull_request"),
        ("pull_request_review", _without(p.review_event("x"), "review"), "payload.review"),
        (
            "pull_request_review_comment",
            _without(p.review_comment_event("x"), "pull_request"),
            "payload.pull_request",
        ),
        ("workflow_run", _without(p.workflow_run_event(), "workflow_run"), "workflow_run"),
        (
            "workflow_run",
            _with(p.workflow_run_event(), "x", "workflow_run", "pull_requests"),
            "pull_requests is not a list",
        ),
        ("check_run", _without(p.check_run_event(), "check_run"), "payload.check_run"),
        ("check_suite", _without(p.check_suite_event(), "check_suite"), "payload.check_suite"),
        ("status", _without(p.status_event(), "state"), "payload.state"),
    ],
)
def test_malformed_payloads_are_refused_with_a_reason(
    name: str, payload: dict[str, Any], message: str
) -> None:
    with pytest.raises(BadInput, match=message.replace(".", r"\.")):
        parse(name, payload)


@pytest.mark.parametrize(
    ("name", "payload", "delivery", "host"),
    [
        ("", {}, "d", "github.com"),
        ("issues", {}, "", "github.com"),
        ("issues", {}, "bad\nid", "github.com"),
        ("issues", {}, "x" * 201, "github.com"),
        ("issues", [], "d", "github.com"),
        ("issues", {}, "d", "not a host"),
    ],
)
def test_bad_envelopes_are_refused(name: str, payload: Any, delivery: str, host: str) -> None:
    with pytest.raises(BadInput):
        parse_webhook(name, payload, delivery, host=host)


# --- excerpt and repos ----------------------------------------------------------------------


def test_excerpt_is_allow_listed_and_size_limited() -> None:
    payload = p.issue_comment_event("secret body " * 1000)
    payload["issue"]["title"] = "t" * 5000
    event = parse("issue_comment", payload)
    assert "comment.body" not in event.excerpt
    assert "sender.login" not in event.excerpt
    title = event.excerpt["issue.title"]
    assert isinstance(title, str) and len(title) == EXCERPT_STRING_LIMIT and title.endswith("…")
    assert event.excerpt["issue.number"] == 15


def test_excerpt_total_size_is_bounded() -> None:
    payload = {f"k{i}": "v" * 1000 for i in range(20)}
    excerpt = payload_excerpt(payload, [f"k{i}" for i in range(20)])
    assert sum(len(str(v)) for v in excerpt.values()) <= EXCERPT_TOTAL_LIMIT


@pytest.mark.parametrize(
    ("repos", "ref", "allowed"),
    [
        ([], ISSUE, True),
        (["octo/repo"], ISSUE, True),
        (["Octo/Repo"], ISSUE, True),
        (["octo/other"], ISSUE, False),
        (["octo/repo"], WorkItemRef("octo", "repo", 1, host="ghe.example.com"), True),
    ],
)
def test_repo_allowed_matches_owner_repo(repos: list[str], ref: WorkItemRef, allowed: bool) -> None:
    assert repo_allowed(ref, repos) is allowed


# --- properties -----------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)
_KEYS = st.sampled_from(
    [
        "action",
        "issue",
        "comment",
        "pull_request",
        "review",
        "repository",
        "sender",
        "number",
        "body",
        "head",
        "ref",
        "pull_requests",
        "state",
        "branches",
        "workflow_run",
        "check_run",
        "check_suite",
        "full_name",
        "login",
        "labels",
        "label",
        "name",
        "nodes",
    ]
)
_NAMES = st.sampled_from([*sorted(SUPPORTED_EVENTS), "ping", "push"])
_VALID = {
    "issues": p.issues_event(),
    "issue_comment": p.issue_comment_event("the-loop do x", on_pr=True, number=20),
    "pull_request": p.pull_request_event(closing_refs={"nodes": [{"number": 3}]}),
    "pull_request_review": p.review_event("x"),
    "pull_request_review_comment": p.review_comment_event("x"),
    "workflow_run": p.workflow_run_event(),
    "check_run": p.check_run_event(),
    "check_suite": p.check_suite_event(),
    "status": p.status_event(),
}


def _parse_or_refuse(name: str, payload: Any) -> None:
    try:
        event = parse_webhook(name, payload, "d-1")
    except BadInput:
        return
    assert isinstance(event, WorkEvent)
    assert (event.own is None) == (not event.items)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(name=_NAMES, payload=st.dictionaries(_KEYS | st.text(max_size=8), _json, max_size=8))
def test_arbitrary_json_objects_parse_or_raise_bad_input(name: str, payload: Any) -> None:
    _parse_or_refuse(name, payload)


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """A valid payload with a few values somewhere inside replaced by arbitrary JSON."""
    name = draw(st.sampled_from(sorted(_VALID)))
    payload = copy.deepcopy(_VALID[name])
    for _ in range(draw(st.integers(1, 3))):
        node: Any = payload
        while isinstance(node, dict) and node and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(node)))
            if not isinstance(node[key], dict):
                break
            node = node[key]
        if isinstance(node, dict) and node:
            node[draw(st.sampled_from(sorted(node)))] = draw(_json)
    return name, payload


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(case=_mutated())
def test_mutated_valid_payloads_parse_or_raise_bad_input(case: tuple[str, dict[str, Any]]) -> None:
    _parse_or_refuse(*case)


@given(number=st.integers(1, 10**6), word=st.sampled_from(["Fixes", "closes", "RESOLVED"]))
def test_closing_keyword_forms_agree(number: int, word: str) -> None:
    short = closing_keyword_refs(f"{word} #{number}", "octo", "repo")
    full = closing_keyword_refs(f"{word} octo/repo#{number}", "octo", "repo")
    url = closing_keyword_refs(
        f"{word} https://github.com/octo/repo/issues/{number}", "octo", "repo"
    )
    assert short == full == url == [WorkItemRef("octo", "repo", number)]
