"""A turn that failed for good sends its messages again (decision 0082): real hook processes and
a real daemon over a real SQLite file. When Claude Code's ``StopFailure`` says the agent cannot
work until someone fixes it (no login, no credit), every message delivered since its model last
answered is queued again, marked, and held like any other; what the model answered before is
not; a message queued again twice carries the mark once; a failure that may pass resends
nothing (the next message is its retry)."""

from __future__ import annotations

from typing import Any

from tests.attention.hooks import AGENT, hook_env, issue, row, run_hook
from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.reports import RESEND_NOTE
from the_loop.store import open_database, prompts


def _deliver(work: Work, text: str, delivery_id: str | None = None) -> int:
    """Queue TEXT for the agent and record it delivered, as a paste does."""
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        with db.transaction() as tx:
            seq = prompts.add(tx, AGENT, text, delivery_id)
            assert seq is not None
            prompts.mark(tx, seq, prompts.PromptStatus.delivered)
        return seq
    finally:
        db.close()


def _queue(work: Work) -> list[tuple[str, str, str | None]]:
    """(status, text, delivery id) of every prompt of the agent, in order."""
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        rows = db.connect().execute(
            "SELECT status, prompt, delivery_id FROM agent_prompts WHERE agent = ? ORDER BY seq",
            (AGENT,),
        )
        return [(str(r[0]), str(r[1]), r[2]) for r in rows]
    finally:
        db.close()


def _failed(error: str) -> dict[str, Any]:
    return {"hook_event_name": "StopFailure", "error": error, "error_details": "Not logged in"}


def _resent(daemon: Daemon) -> list[int]:
    found = daemon.api("GET", "/events", params={"type": "session.resent"}).json()
    return [e["payload"]["count"] for e in found]


def test_a_failed_turns_messages_are_queued_again_and_marked(work: Work, daemon: Daemon) -> None:
    env = hook_env(work.env, issue(work.env))
    _deliver(work, "ANSWERED before")
    assert run_hook(env, {"hook_event_name": "Stop"}).returncode == 0  # the model answered it
    _deliver(work, "NEVER-SEEN by the model", "delivery-7")
    _deliver(work, "NEVER-SEEN either")

    assert run_hook(env, _failed("authentication_failed")).returncode == 0
    wait_until(lambda: _resent(daemon) == [2], 10, what="session.resent")
    queue = _queue(work)
    assert queue == [
        ("delivered", "ANSWERED before", None),
        ("resent", "NEVER-SEEN by the model", "delivery-7"),  # its delivery id stays here
        ("resent", "NEVER-SEEN either", None),
        ("pending", RESEND_NOTE + "NEVER-SEEN by the model", None),
        ("pending", RESEND_NOTE + "NEVER-SEEN either", None),
    ], queue
    assert (found := row(work.env)) is not None and found.state == "blocked"


def test_a_failure_that_may_pass_sends_nothing_again(work: Work, daemon: Daemon) -> None:
    env = hook_env(work.env, issue(work.env))
    assert run_hook(env, {"hook_event_name": "SessionStart"}).returncode == 0
    _deliver(work, "RATE-LIMITED turn")
    assert run_hook(env, _failed("rate_limit")).returncode == 0
    wait_until(lambda: (r := row(work.env)) and r.state == "blocked", 10, what="blocked")
    assert _queue(work) == [("delivered", "RATE-LIMITED turn", None)]
    assert _resent(daemon) == []


def test_a_message_sent_again_twice_carries_one_mark(work: Work) -> None:
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        with db.transaction() as tx:
            seq = prompts.add(tx, AGENT, "AGAIN", "delivery-9")
            assert seq is not None
            prompts.mark(tx, seq, prompts.PromptStatus.delivered)
            assert prompts.resend(tx, AGENT, None, RESEND_NOTE) == 1
            copy = prompts.pending(tx, AGENT)[0]
            prompts.mark(tx, copy.seq, prompts.PromptStatus.delivered)
            assert prompts.resend(tx, AGENT, None, RESEND_NOTE) == 1
            assert prompts.delivered_count(tx, AGENT) == 2  # both were delivered once
    finally:
        db.close()
    assert _queue(work) == [
        ("resent", "AGAIN", "delivery-9"),
        ("resent", RESEND_NOTE + "AGAIN", None),
        ("pending", RESEND_NOTE + "AGAIN", None),
    ]
