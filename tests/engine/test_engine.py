"""The routing rules of SPEC §6, decided from parsed webhook payloads and plain state values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.fakes import payloads as p
from the_loop.config import Config, KeywordsConfig
from the_loop.engine import (
    Close,
    CloseReason,
    Decision,
    Deliver,
    Duplicate,
    Ignore,
    IgnoreReason,
    KeepOpen,
    Keyword,
    LiveSession,
    LiveStatus,
    Pause,
    PriorDelivery,
    Reply,
    Resume,
    RouteState,
    Spawn,
    Unauthorized,
    decide,
    scan_commands,
)
from the_loop.github.parse import parse_webhook
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent

ISSUE = WorkItemRef("octo", "repo", 15)
PR = WorkItemRef("octo", "repo", 20)
ISSUE_SESSION = LiveSession("s-15", requester="alice")
PR_SESSION = LiveSession("s-20", requester="alice")
PAUSED = LiveSession("s-15", LiveStatus.PAUSED, "alice")


def config(github: dict[str, Any] | None = None, **routing: Any) -> Config:
    base: dict[str, Any] = {"authorizedUsers": ["alice", "Bob"], "botLogin": "loop-bot"}
    return Config.model_validate({"routing": {**base, **routing}, "github": github or {}})


CONFIG = config()


def event(name: str, payload: dict[str, Any], delivery: str = "d-1") -> WorkEvent:
    return parse_webhook(name, payload, delivery)


def comment(body: str, **kwargs: Any) -> WorkEvent:
    return event("issue_comment", p.issue_comment_event(body, **kwargs))


def pr_comment(body: str, **kwargs: Any) -> WorkEvent:
    return comment(body, number=20, on_pr=True, **kwargs)


def state(prior: PriorDelivery = PriorDelivery.NONE, **live: LiveSession) -> RouteState:
    refs = {"issue": ISSUE, "pr": PR}
    return RouteState({refs[key]: session for key, session in live.items()}, prior)


def only(decision: Decision) -> object:
    assert len(decision.actions) == 1, decision
    return decision.actions[0]


def ignored(decision: Decision) -> IgnoreReason:
    action = only(decision)
    assert isinstance(action, Ignore), decision
    assert not decision.acts
    return action.reason


# --- rule 1: event types, dedupe, what cannot be routed -------------------------------------


def test_event_type_outside_the_configured_set_is_ignored() -> None:
    cfg = config(github={"webhook": {"events": ["issues", "pull_request"]}})
    decision = decide(comment("the-loop start"), state(), cfg)
    assert ignored(decision) is IgnoreReason.EVENT_NOT_CONFIGURED
    assert decision.actions[0].event_type == "route.ignored"


def test_a_delivery_processed_successfully_is_a_duplicate() -> None:
    decision = decide(comment("the-loop start"), state(PriorDelivery.SUCCEEDED), CONFIG)
    assert only(decision) == Duplicate("d-1")
    assert decision.actions[0].event_type == "webhook.duplicate"


def test_a_delivery_whose_processing_failed_is_processed_again() -> None:
    decision = decide(comment("the-loop start"), state(PriorDelivery.FAILED), CONFIG)
    assert only(decision) == Spawn(ISSUE, Keyword.START, "")
    assert "failed before" in decision.reasons[0]


def test_an_object_another_delivery_processed_is_ignored_as_a_replay() -> None:
    stop = comment("the-loop stop", comment_id=7)
    assert stop.source_id == "comment-7" and stop.replay_key == "github.com/comment-7"
    replayed = RouteState({ISSUE: ISSUE_SESSION}, seen_by="d-0")
    decision = decide(stop, replayed, CONFIG)
    assert ignored(decision) is IgnoreReason.ALREADY_PROCESSED
    assert "comment-7" in decision.reasons[0] and "d-0" in decision.reasons[0]
    own = RouteState({ISSUE: ISSUE_SESSION}, PriorDelivery.FAILED, seen_by="d-1")
    assert only(decide(stop, own, CONFIG)) == Close(ISSUE, "s-15", CloseReason.STOPPED)


def test_reviews_and_review_comments_carry_their_github_ids() -> None:
    review = event("pull_request_review", p.review_event("ok", review_id=80))
    note = event("pull_request_review_comment", p.review_comment_event("hm", note_id=175))
    edited = comment("the-loop start", action="edited", comment_id=9)
    assert (review.source_id, note.source_id) == ("review-80", "review-comment-175")
    assert edited.source_id is None and event("issues", p.issues_event()).source_id is None


def test_a_configured_type_that_cannot_name_an_item_is_ignored() -> None:
    cfg = config(github={"webhook": {"events": ["issues", "pull_request", "push"]}})
    decision = decide(event("push", p.ping_event()), state(), cfg)
    assert ignored(decision) is IgnoreReason.UNSUPPORTED_EVENT


def test_ping_is_not_a_configured_event() -> None:
    assert ignored(decide(event("ping", p.ping_event()), state(), CONFIG)) is (
        IgnoreReason.EVENT_NOT_CONFIGURED
    )


def test_repository_outside_github_repos_is_ignored() -> None:
    cfg = config(github={"repos": ["octo/other"]})
    decision = decide(comment("the-loop start"), state(), cfg)
    assert ignored(decision) is IgnoreReason.REPOSITORY_NOT_CONFIGURED


def test_repository_in_github_repos_is_routed_case_insensitively() -> None:
    cfg = config(github={"repos": ["Octo/Repo"]})
    assert only(decide(comment("the-loop start"), state(), cfg)) == Spawn(ISSUE, Keyword.START, "")


def test_an_action_nothing_routes_is_ignored() -> None:
    edited = comment("the-loop start", action="edited")
    assert ignored(decide(edited, state(issue=ISSUE_SESSION), CONFIG)) is (
        IgnoreReason.ACTION_NOT_ROUTED
    )


def test_ci_that_concerns_no_item_is_ignored() -> None:
    run = event("workflow_run", p.workflow_run_event(pull_requests=[], head_branch="main"))
    assert ignored(decide(run, state(), CONFIG)) is IgnoreReason.NO_WORK_ITEM


# --- rule 2: the-loop's own words -----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "Done, see the PR.\n\n<!-- the-loop -->",
        "<!--the-loop--> the-loop start",
        "<!--  The-Loop  -->\nthe-loop stop",
    ],
)
def test_self_marker_is_ignored_even_from_an_authorized_user(body: str) -> None:
    decision = decide(comment(body), state(issue=ISSUE_SESSION), CONFIG)
    assert ignored(decision) is IgnoreReason.SELF_MARKER


def test_self_marker_in_a_review_is_ignored() -> None:
    review = event("pull_request_review", p.review_event("LGTM <!-- the-loop -->"))
    assert ignored(decide(review, state(pr=PR_SESSION), CONFIG)) is IgnoreReason.SELF_MARKER


def test_bot_login_is_ignored_even_when_authorized() -> None:
    cfg = config(authorizedUsers=["alice", "loop-bot"])
    decision = decide(comment("the-loop start", sender="Loop-Bot"), state(), cfg)
    assert ignored(decision) is IgnoreReason.BOT_AUTHOR


def test_pull_request_opened_by_the_bot_is_ignored() -> None:
    opened = event("pull_request", p.pull_request_event("opened", sender="loop-bot"))
    assert ignored(decide(opened, state(issue=ISSUE_SESSION), CONFIG)) is (IgnoreReason.BOT_AUTHOR)


# --- rule 3: closes -------------------------------------------------------------------------


def test_issue_close_from_an_unauthorized_actor_closes_its_session() -> None:
    closed = event("issues", p.issues_event("closed", state="closed", sender="mallory"))
    decision = decide(closed, state(issue=ISSUE_SESSION), config(authorizedUsers=[]))
    assert only(decision) == Close(ISSUE, "s-15", CloseReason.ISSUE_CLOSED)
    assert decision.actions[0].event_type == "session.autoclosed"


def test_close_by_the_bot_login_closes() -> None:
    closed = event("issues", p.issues_event("closed", state="closed", sender="loop-bot"))
    assert only(decide(closed, state(issue=ISSUE_SESSION), CONFIG)) == Close(
        ISSUE, "s-15", CloseReason.ISSUE_CLOSED
    )


def test_merged_pull_request_closes_its_session_and_keeps_the_linked_issue_open() -> None:
    merged = event("pull_request", p.pull_request_event("closed", merged=True, state="closed"))
    decision = decide(merged, state(issue=ISSUE_SESSION, pr=PR_SESSION), CONFIG)
    assert decision.actions == (
        KeepOpen(ISSUE, "s-15", PR),
        Close(PR, "s-20", CloseReason.PR_MERGED),
    )
    assert decision.actions[0].event_type == "session.kept_open"


def test_pull_request_closed_without_merge_is_pr_closed() -> None:
    closed = event("pull_request", p.pull_request_event("closed", merged=False, state="closed"))
    assert only(decide(closed, state(pr=PR_SESSION), CONFIG)) == Close(
        PR, "s-20", CloseReason.PR_CLOSED
    )


def test_a_session_matched_only_through_a_link_stays_open() -> None:
    merged = event("pull_request", p.pull_request_event("closed", merged=True, state="closed"))
    assert only(decide(merged, state(issue=ISSUE_SESSION), CONFIG)) == KeepOpen(ISSUE, "s-15", PR)


def test_closing_a_paused_session_closes_it() -> None:
    closed = event("issues", p.issues_event("closed", state="closed"))
    assert only(decide(closed, state(issue=PAUSED), CONFIG)) == Close(
        ISSUE, "s-15", CloseReason.ISSUE_CLOSED
    )


def test_close_with_no_live_session_does_nothing_and_never_spawns() -> None:
    cfg = config(requireStartCommand=False)
    closed = event("issues", p.issues_event("closed", state="closed", labels=["the-loop"]))
    assert ignored(decide(closed, state(), cfg)) is IgnoreReason.NO_LIVE_SESSION


def test_close_still_works_with_routing_disabled() -> None:
    closed = event("issues", p.issues_event("closed", state="closed"))
    assert only(decide(closed, state(issue=ISSUE_SESSION), config(enabled=False))) == Close(
        ISSUE, "s-15", CloseReason.ISSUE_CLOSED
    )


_ITEMS = st.sampled_from(["issue", "pr"])
_SESSIONS = st.sampled_from([ISSUE_SESSION, PR_SESSION, PAUSED])


@given(
    live=st.dictionaries(_ITEMS, _SESSIONS),
    merged=st.booleans(),
    on_pr=st.booleans(),
    sender=st.sampled_from(["alice", "mallory", "loop-bot"]),
    body=st.sampled_from(["the-loop start", "Fixes #15 the-loop do x", None]),
)
def test_a_close_never_spawns_or_delivers(
    live: dict[str, LiveSession], merged: bool, on_pr: bool, sender: str, body: str | None
) -> None:
    if on_pr:
        payload = p.pull_request_event("closed", merged=merged, sender=sender, body=body)
        closed = event("pull_request", payload)
    else:
        closed = event("issues", p.issues_event("closed", sender=sender, body=body))
    decision = decide(closed, state(**live), CONFIG)
    assert all(isinstance(a, Close | KeepOpen | Ignore) for a in decision.actions)
    closes = [a.item for a in decision.actions if isinstance(a, Close)]
    assert closes == ([closed.own] if closed.own in state(**live).live else [])


# --- rule 4: authorization ------------------------------------------------------------------


def test_empty_authorized_users_means_nobody() -> None:
    decision = decide(comment("the-loop start"), state(), config(authorizedUsers=[]))
    assert only(decision) == Unauthorized("alice")
    assert decision.actions[0].event_type == "route.unauthorized"


def test_a_stranger_is_not_delivered_to_a_live_session() -> None:
    decision = decide(
        comment("please rm -rf", sender="mallory"), state(issue=ISSUE_SESSION), CONFIG
    )
    assert only(decision) == Unauthorized("mallory")


def test_authorized_logins_compare_case_insensitively() -> None:
    assert only(decide(comment("the-loop start", sender="ALICE"), state(), CONFIG)) == Spawn(
        ISSUE, Keyword.START, ""
    )
    assert only(decide(comment("the-loop start", sender="bob"), state(), CONFIG)) == Spawn(
        ISSUE, Keyword.START, ""
    )


def test_routing_disabled_spawns_nothing() -> None:
    decision = decide(comment("the-loop start"), state(), config(enabled=False))
    assert ignored(decision) is IgnoreReason.ROUTING_DISABLED


def test_label_by_an_unauthorized_actor_does_not_arm() -> None:
    labeled = event("issues", p.issues_event("labeled", added_label="the-loop", sender="eve"))
    assert only(decide(labeled, state(), config(requireStartCommand=False))) == Unauthorized("eve")


# --- rule 5: keywords -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        "the-loop start",
        "Could you have a look? the-loop start",
        "The-Loop START please",
        "first line\n\nthe-loop  start\nlast line",
        "the-loop start.",
        "(the-loop start)",
    ],
)
def test_start_anywhere_as_whole_words_arms_the_item(body: str) -> None:
    assert only(decide(comment(body), state(), CONFIG)) == Spawn(ISSUE, Keyword.START, "")


@pytest.mark.parametrize(
    "body",
    [
        "the-loop doing great",
        "the-loop starting soon",
        "the-loop started",
        "xthe-loop start",
        "my-the-loop start",
        "the-loop start-up",
        "the-loopstart",
        "the loop start",
        "> the-loop start",
        "`the-loop start`",
        "```\nthe-loop start\n```",
        "",
    ],
)
def test_text_that_only_resembles_a_keyword_does_not_arm(body: str) -> None:
    assert ignored(decide(comment(body), state(), CONFIG)) is IgnoreReason.NOT_ARMED


def test_do_takes_the_rest_of_the_comment_as_the_instruction() -> None:
    body = "Hi!\nthe-loop do fix the flaky test\n```\nTraceback ...\n```"
    assert only(decide(comment(body), state(), CONFIG)) == Spawn(
        ISSUE, Keyword.DO, "fix the flaky test\n```\nTraceback ...\n```"
    )


def test_keyword_in_the_body_of_an_opened_issue_arms_it() -> None:
    opened = event("issues", p.issues_event("opened", body="the-loop do add a CLI flag"))
    assert only(decide(opened, state(), CONFIG)) == Spawn(ISSUE, Keyword.DO, "add a CLI flag")


def test_keyword_in_a_review_arms_the_pull_request() -> None:
    review = event("pull_request_review", p.review_event("the-loop do address these"))
    assert only(decide(review, state(), CONFIG)) == Spawn(PR, Keyword.DO, "address these")


@pytest.mark.parametrize(
    "body",
    [
        "the-loop start\nthe-loop stop",
        "the-loop pause and the-loop resume",
        "the-loop do it, then the-loop stop",
    ],
)
def test_two_different_keywords_do_nothing_but_reply_why(body: str) -> None:
    decision = decide(comment(body), state(issue=ISSUE_SESSION), CONFIG)
    assert decision.actions[0] == Ignore(IgnoreReason.CONFLICTING_KEYWORDS)
    reply = decision.actions[1]
    assert isinstance(reply, Reply) and reply.item == ISSUE
    assert "more than one" in reply.text and reply.to == "alice"  # the outbox renders @alice
    assert len(decision.actions) == 2 and not decision.acts


def test_the_same_keyword_twice_is_one_command() -> None:
    body = "the-loop do first\nthe-loop do second"
    assert only(decide(comment(body), state(), CONFIG)) == Spawn(
        ISSUE, Keyword.DO, "first\nthe-loop do second"
    )


def test_a_quoted_command_does_not_count() -> None:
    body = "> the-loop pause\n\nthe-loop resume"
    assert only(decide(comment(body), state(issue=PAUSED), CONFIG)) == Resume(ISSUE, "s-15")


def test_stop_closes_the_live_session() -> None:
    decision = decide(comment("the-loop stop"), state(issue=ISSUE_SESSION), CONFIG)
    assert only(decision) == Close(ISSUE, "s-15", CloseReason.STOPPED)


def test_stop_closes_a_paused_session_too() -> None:
    assert only(decide(comment("the-loop stop"), state(issue=PAUSED), CONFIG)) == Close(
        ISSUE, "s-15", CloseReason.STOPPED
    )


@pytest.mark.parametrize("keyword", ["stop", "pause", "resume"])
def test_control_keywords_without_a_live_session_do_nothing(keyword: str) -> None:
    decision = decide(comment(f"the-loop {keyword}"), state(), CONFIG)
    assert ignored(decision) is IgnoreReason.NO_LIVE_SESSION


def test_pause_suppresses_delivery_and_resume_lifts_it() -> None:
    paused = decide(comment("the-loop pause"), state(issue=ISSUE_SESSION), CONFIG)
    assert only(paused) == Pause(ISSUE, "s-15")
    assert paused.actions[0].event_type == "session.paused"
    dropped = decide(comment("a remark while paused"), state(issue=PAUSED), CONFIG)
    assert ignored(dropped) is IgnoreReason.SESSION_PAUSED
    resumed = decide(comment("the-loop resume"), state(issue=PAUSED), CONFIG)
    assert only(resumed) == Resume(ISSUE, "s-15")
    assert resumed.actions[0].event_type == "session.resumed"


def test_do_into_a_paused_session_is_dropped() -> None:
    decision = decide(comment("the-loop do more"), state(issue=PAUSED), CONFIG)
    assert ignored(decision) is IgnoreReason.SESSION_PAUSED


def test_pause_twice_and_resume_when_active_change_nothing() -> None:
    assert ignored(decide(comment("the-loop pause"), state(issue=PAUSED), CONFIG)) is (
        IgnoreReason.ALREADY_PAUSED
    )
    assert ignored(decide(comment("the-loop resume"), state(issue=ISSUE_SESSION), CONFIG)) is (
        IgnoreReason.NOT_PAUSED
    )


def test_custom_keyword_phrases() -> None:
    cfg = config(keywords={"start": "/agent go", "do": "@loop please"})
    assert only(decide(comment("ok /agent go"), state(), cfg)) == Spawn(ISSUE, Keyword.START, "")
    assert only(decide(comment("@loop please tidy up"), state(), cfg)) == Spawn(
        ISSUE, Keyword.DO, "tidy up"
    )
    assert ignored(decide(comment("the-loop start"), state(), cfg)) is IgnoreReason.NOT_ARMED


def test_arming_a_closed_item_spawns_nothing() -> None:
    decision = decide(comment("the-loop start", state="closed"), state(), CONFIG)
    assert ignored(decision) is IgnoreReason.ITEM_CLOSED


def test_reopen_does_nothing_and_the_next_arming_spawns_a_fresh_session() -> None:
    reopened = event("issues", p.issues_event("reopened", body="the-loop start"))
    assert ignored(decide(reopened, state(), CONFIG)) is IgnoreReason.NOT_ARMED
    assert only(decide(comment("the-loop start"), state(), CONFIG)) == Spawn(
        ISSUE, Keyword.START, ""
    )


# --- rule 5: the label ----------------------------------------------------------------------

NO_COMMAND = config(requireStartCommand=False)


def test_label_on_an_opened_issue_arms_it_without_a_command() -> None:
    opened = event("issues", p.issues_event("opened", labels=["bug", "The-Loop"]))
    assert only(decide(opened, state(), NO_COMMAND)) == Spawn(ISSUE, None, "")


def test_adding_the_label_arms_the_item() -> None:
    labeled = event("issues", p.issues_event("labeled", added_label="the-loop"))
    assert only(decide(labeled, state(), NO_COMMAND)) == Spawn(ISSUE, None, "")


def test_another_label_does_not_arm() -> None:
    labeled = event("issues", p.issues_event("labeled", added_label="bug", labels=["the-loop"]))
    assert ignored(decide(labeled, state(), NO_COMMAND)) is IgnoreReason.NOT_ARMED


def test_label_does_not_arm_when_a_start_command_is_required() -> None:
    labeled = event("issues", p.issues_event("labeled", added_label="the-loop"))
    assert ignored(decide(labeled, state(), CONFIG)) is IgnoreReason.NOT_ARMED


def test_label_on_a_pull_request_opened_arms_the_pull_request() -> None:
    opened = event("pull_request", p.pull_request_event("opened", labels=["the-loop"]))
    assert only(decide(opened, state(), NO_COMMAND)) == Spawn(PR, None, "")


# --- rule 6: deliver or spawn ---------------------------------------------------------------


def test_a_comment_on_an_item_with_a_live_session_is_delivered() -> None:
    decision = decide(comment("What about Windows?"), state(issue=ISSUE_SESSION), CONFIG)
    assert only(decision) == Deliver(ISSUE, "s-15")
    assert decision.actions[0].event_type == "session.delivered"


def test_a_comment_without_a_command_on_an_item_without_a_session_does_nothing() -> None:
    assert ignored(decide(comment("What about Windows?"), state(), CONFIG)) is (
        IgnoreReason.NOT_ARMED
    )


def test_start_with_a_live_session_delivers_instead_of_spawning() -> None:
    decision = decide(comment("the-loop do also add docs"), state(issue=ISSUE_SESSION), CONFIG)
    assert only(decision) == Deliver(ISSUE, "s-15")


def test_pr_comments_go_to_the_linked_issues_live_session_first() -> None:
    live = state(issue=ISSUE_SESSION, pr=PR_SESSION)
    assert only(decide(pr_comment("nit: rename"), live, CONFIG)) == Deliver(ISSUE, "s-15")
    review = event("pull_request_review_comment", p.review_comment_event("Off by one"))
    assert only(decide(review, live, CONFIG)) == Deliver(ISSUE, "s-15")


def test_pr_comments_go_to_the_pr_session_when_the_issue_has_none() -> None:
    assert only(decide(pr_comment("nit"), state(pr=PR_SESSION), CONFIG)) == Deliver(PR, "s-20")


def test_arming_a_pull_request_whose_issue_has_a_live_session_delivers_there() -> None:
    decision = decide(pr_comment("the-loop do rebase"), state(issue=ISSUE_SESSION), CONFIG)
    assert only(decision) == Deliver(ISSUE, "s-15")


def test_arming_a_pull_request_with_no_live_session_spawns_for_the_pull_request() -> None:
    decision = decide(pr_comment("the-loop do address the review"), state(), CONFIG)
    assert only(decision) == Spawn(PR, Keyword.DO, "address the review")


def test_pr_opened_that_fixes_an_issue_with_a_session_is_delivered_to_it() -> None:
    opened = event("pull_request", p.pull_request_event("opened", body="Fixes #15"))
    assert only(decide(opened, state(issue=ISSUE_SESSION), CONFIG)) == Deliver(ISSUE, "s-15")


def test_a_linked_issue_in_a_repository_not_configured_is_not_delivered_to() -> None:
    other = WorkItemRef("elsewhere", "lib", 15)
    cfg = config(github={"repos": ["octo/repo"]})
    payload = p.issue_comment_event(
        "nit", number=20, on_pr=True, issue_body="Closes elsewhere/lib#15"
    )
    parsed = event("issue_comment", payload)
    assert parsed.items == (other, PR)
    live = RouteState({other: LiveSession("s-x"), PR: PR_SESSION})
    assert only(decide(parsed, live, cfg)) == Deliver(PR, "s-20")
    assert only(decide(parsed, live, CONFIG)) == Deliver(other, "s-x")


# --- rule 6: CI -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "payload"),
    [
        ("workflow_run", p.workflow_run_event("failure")),
        ("check_run", p.check_run_event("timed_out")),
        ("check_suite", p.check_suite_event("action_required")),
    ],
)
def test_ci_with_a_routed_conclusion_is_delivered(name: str, payload: dict[str, Any]) -> None:
    assert only(decide(event(name, payload), state(pr=PR_SESSION), CONFIG)) == Deliver(PR, "s-20")


@pytest.mark.parametrize("conclusion", ["success", "cancelled", "neutral", "skipped", None])
def test_ci_with_another_conclusion_is_not_delivered(conclusion: str | None) -> None:
    run = event("workflow_run", p.workflow_run_event(conclusion))
    assert ignored(decide(run, state(pr=PR_SESSION), CONFIG)) is (
        IgnoreReason.CI_CONCLUSION_NOT_ROUTED
    )


def test_ci_conclusions_come_from_config() -> None:
    run = event("workflow_run", p.workflow_run_event("cancelled"))
    cfg = config(ciConclusions=["cancelled"])
    assert only(decide(run, state(pr=PR_SESSION), cfg)) == Deliver(PR, "s-20")


def test_ci_never_spawns() -> None:
    run = event("workflow_run", p.workflow_run_event("failure"))
    assert ignored(decide(run, state(), NO_COMMAND)) is IgnoreReason.NO_LIVE_SESSION


def test_ci_for_a_paused_session_is_dropped() -> None:
    run = event("status", p.status_event("failure"))
    assert ignored(decide(run, state(issue=PAUSED), CONFIG)) is IgnoreReason.SESSION_PAUSED


def test_ci_on_an_issue_branch_reaches_the_issue_session() -> None:
    run = event("status", p.status_event("error", branches=["issue-15"]))
    assert only(decide(run, state(issue=ISSUE_SESSION), CONFIG)) == Deliver(ISSUE, "s-15")


def test_ci_needs_no_authorized_sender_and_is_not_dropped_for_the_bot() -> None:
    ghost = event("check_run", p.check_run_event("failure"))
    assert only(decide(ghost, state(pr=PR_SESSION), CONFIG)) == Deliver(PR, "s-20")
    by_bot = event("workflow_run", p.workflow_run_event("failure", sender="loop-bot"))
    assert only(decide(by_bot, state(pr=PR_SESSION), CONFIG)) == Deliver(PR, "s-20")


def test_ci_is_ignored_when_routing_is_disabled() -> None:
    run = event("workflow_run", p.workflow_run_event("failure"))
    assert ignored(decide(run, state(pr=PR_SESSION), config(enabled=False))) is (
        IgnoreReason.ROUTING_DISABLED
    )


# --- keyword scanning -----------------------------------------------------------------------

KEYWORDS = KeywordsConfig()


def test_scan_reports_distinct_keywords_in_order() -> None:
    scan = scan_commands("the-loop stop, the-loop start, the-loop stop", KEYWORDS)
    assert scan.keywords == (Keyword.STOP, Keyword.START)


def test_scan_prefers_the_longer_of_overlapping_phrases() -> None:
    keywords = KeywordsConfig(start="go", do="go now")
    assert scan_commands("please go now: tidy", keywords).keywords == (Keyword.DO,)
    assert scan_commands("please go now: tidy", keywords).instruction == ": tidy"


@given(suffix=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1))
def test_a_keyword_followed_by_word_characters_never_matches(suffix: str) -> None:
    for phrase in ("the-loop do", "the-loop start", "the-loop stop"):
        assert scan_commands(f"{phrase}{suffix} now", KEYWORDS).keywords == ()


@given(
    before=st.text(alphabet=" \n\t.,;:!?()", max_size=5),
    after=st.text(alphabet=" \n\t.,;:!?()", max_size=5),
    keyword=st.sampled_from(list(Keyword)),
)
def test_a_keyword_between_separators_always_matches(
    before: str, after: str, keyword: Keyword
) -> None:
    phrase = getattr(KEYWORDS, keyword.value).upper()
    assert scan_commands(f"{before}{phrase}{after}", KEYWORDS).keywords == (keyword,)


# --- totality -------------------------------------------------------------------------------

_EVENTS = [
    comment("the-loop start"),
    comment("the-loop do x\nthe-loop stop"),
    pr_comment("the-loop pause"),
    pr_comment("the-loop resume"),
    event("issues", p.issues_event("labeled", added_label="the-loop")),
    event("issues", p.issues_event("reopened")),
    event("pull_request", p.pull_request_event("closed", merged=True)),
    event("workflow_run", p.workflow_run_event("failure")),
    event("status", p.status_event("pending")),
    event("ping", p.ping_event()),
]


@given(
    ev=st.sampled_from(_EVENTS),
    live=st.dictionaries(_ITEMS, _SESSIONS),
    prior=st.sampled_from(list(PriorDelivery)),
    cfg=st.sampled_from([CONFIG, NO_COMMAND, config(authorizedUsers=[]), config(enabled=False)]),
)
def test_decide_is_total_and_acts_on_at_most_one_session_unless_closing(
    ev: WorkEvent, live: dict[str, LiveSession], prior: PriorDelivery, cfg: Config
) -> None:
    decision = decide(ev, state(prior, **live), cfg)
    assert decision.actions and decision.reasons
    if prior is PriorDelivery.SUCCEEDED and ev.event_name in cfg.github.webhook.events:
        assert decision.actions == (Duplicate("d-1"),)
    acting = [a for a in decision.actions if isinstance(a, Spawn | Deliver | Pause | Resume)]
    assert len(acting) <= 1
    if ev.kind.value == "ci":
        assert not any(isinstance(a, Spawn | Close) for a in decision.actions)


def test_ci_reaches_only_a_session_an_authorized_person_started() -> None:
    run = event("workflow_run", p.workflow_run_event("failure", sender="mallory"))
    assert only(decide(run, state(pr=PR_SESSION), CONFIG)) == Deliver(PR, "s-20")
    by_stranger = state(pr=LiveSession("s-20", requester="mallory"))
    assert ignored(decide(run, by_stranger, CONFIG)) is IgnoreReason.NOT_STARTED_BY_AUTHORIZED
    unknown = state(pr=LiveSession("s-20"))
    assert ignored(decide(run, unknown, CONFIG)) is IgnoreReason.NOT_STARTED_BY_AUTHORIZED


def test_a_replayed_ci_outcome_has_the_same_key_and_is_ignored() -> None:
    first = event("workflow_run", p.workflow_run_event("failure"), "d-ci-1")
    again = event("workflow_run", p.workflow_run_event("failure"), "d-ci-2")
    assert first.replay_key is not None and first.replay_key == again.replay_key
    retried = p.workflow_run_event("failure")
    retried["workflow_run"]["run_attempt"] = 2
    assert event("workflow_run", retried, "d-ci-3").replay_key != first.replay_key
    replayed = RouteState({PR: PR_SESSION}, PriorDelivery.NONE, seen_by="d-ci-1")
    assert ignored(decide(again, replayed, CONFIG)) is IgnoreReason.ALREADY_PROCESSED
