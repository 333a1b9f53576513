"""Decode once: intake turns a delivery into its typed work event (or a refusal) and a lane key;
processing reads that typed form, never the body; rows from before the typed form still run."""

from __future__ import annotations

import json
import sqlite3
import time

from tests.fakes import payloads as P
from tests.work import Work
from the_loop.context import Ctx, open_ctx
from the_loop.intake import dispatch
from the_loop.store import inbox
from the_loop.store.db import DB_NAME
from the_loop.store.inbox import InboxStatus
from the_loop.store.migrations import MIGRATIONS
from the_loop.store.schema import Schema


def _ctx(work: Work) -> Ctx:
    return open_ctx(work.env.config_path)


def test_lane_keys_follow_the_work_item(work: Work) -> None:
    ctx = _ctx(work)

    def lane(event: str, payload: dict[str, object], delivery: str = "d") -> str:
        return dispatch.intake(ctx, event, delivery, payload).lane

    assert lane("issue_comment", P.issue_comment_event("hi", number=7)) == "octo/repo#7"
    assert lane("pull_request", P.pull_request_event("opened")) == "octo/repo#20"
    assert lane("workflow_run", P.workflow_run_event()) == "octo/repo#workflow_run"
    assert lane("push", {"repository": {"full_name": "octo/repo"}}) == "octo/repo#push"
    assert lane("push", {"zen": "no repository"}, "d-alone") == "d-alone"
    assert lane("issue_comment", {"action": "created"}, "d-refused") == "d-refused"


def test_processing_reads_the_typed_event_and_never_the_body(work: Work) -> None:
    ctx = _ctx(work)
    payload = P.issue_comment_event("the-loop start", sender="mallory")
    delivery = dispatch.intake(ctx, "issue_comment", "typed-1", payload)
    assert delivery.work is not None and delivery.refusal is None
    # the raw body kept for forensics is not even JSON: processing must not need it
    dispatch.accept(ctx, delivery, b"\xff not json", "test")
    claimed = inbox.claim(ctx.db, "typed-1")
    assert claimed is not None and claimed.lane == "octo/repo#15"
    result = dispatch.process(ctx, claimed)
    assert result.status == "succeeded", result
    assert any("mallory" in reason for reason in result.reasons), result.reasons


def test_a_payload_that_names_no_item_is_refused_at_intake_and_dead_once(work: Work) -> None:
    ctx = _ctx(work)
    body = json.dumps({"action": "created", "sender": P.user()}).encode()
    delivery = dispatch.intake(ctx, "issue_comment", "refused-1", json.loads(body))
    assert delivery.work is None and delivery.refusal
    assert "repository.full_name" in delivery.refusal
    dispatch.accept(ctx, delivery, body, "test")
    claimed = inbox.claim(ctx.db, "refused-1")
    assert claimed is not None
    result = dispatch.process(ctx, claimed)
    assert result.status == InboxStatus.dead.value and result.error == delivery.refusal
    assert result.exit_code == 2
    assert inbox.claim(ctx.db, "refused-1") is None
    dead = work.events("dispatch.dead_lettered")
    assert [e["deliveryId"] for e in dead] == ["refused-1"]


def _old_database(work: Work) -> None:
    """A state database as it was before ``0011_inbox_work``, with three raw-body rows."""
    work.env.state_dir.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(work.env.state_dir / DB_NAME)
    conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
    for name, apply in MIGRATIONS:
        if name == "0011_inbox_work":
            break
        apply(Schema("sqlite", conn.execute))
        conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))
    rows = [
        ("old-unauth", "issue_comment", P.issue_comment_event("the-loop start", sender="eve")),
        ("old-push", "push", {"repository": {"full_name": "octo/repo"}}),
        ("old-broken", "issue_comment", {"action": "created"}),
    ]
    for n, (delivery, event, payload) in enumerate(rows):
        conn.execute(
            "INSERT INTO inbox (delivery_id, event, source, payload, status, attempts,"
            " received_at, updated_at, next_attempt_at) VALUES (?, ?, 'webhook', ?, 'pending',"
            " 0, ?, ?, ?)",
            (delivery, event, json.dumps(payload).encode(), n, n, n),
        )
    conn.commit()
    conn.close()


def test_rows_stored_before_the_typed_form_still_process(work: Work) -> None:
    _old_database(work)
    ctx = _ctx(work)  # migrates the old database
    outcomes = {}
    while (claimed := inbox.claim_next(ctx.db)) is not None:
        assert claimed.work is None and claimed.lane is None
        lane = dispatch.lane(ctx, claimed)
        outcomes[claimed.item.delivery_id] = (lane, dispatch.process(ctx, claimed))
    assert outcomes["old-unauth"][0] == "octo/repo#15"
    assert outcomes["old-unauth"][1].status == "succeeded"
    assert any("eve" in r for r in outcomes["old-unauth"][1].reasons)
    assert outcomes["old-push"][0] == "octo/repo#push"
    assert outcomes["old-push"][1].status == "succeeded"
    assert outcomes["old-broken"][0] == "old-broken"
    assert outcomes["old-broken"][1].status == "dead"
    assert "repository.full_name" in (outcomes["old-broken"][1].error or "")
