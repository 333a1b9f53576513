"""Budgets that follow the item (issue 29 item 5, decision 0050), over real HTTP against the
daemon: a work item's ``maxTurns`` counts its earlier sessions, so ``close`` and a new start
do not reset it (the new session waits, held, until ``extend``) and what the closed session
kept is carried to the new one and delivered once; a standing session deleted and created
again keeps its usage and its over-budget hold."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.spend.test_suspend import ATTENTION
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.store import usage as usage_store

REF = "local:budget"
SCRIPT = r"""
import json, sys, uuid
out, prompt = sys.argv[1], sys.stdin.read()
with open(out, "a") as handle:
    handle.write(json.dumps(prompt) + "\n")
print(json.dumps({"type": "system", "subtype": "init"}))
print(json.dumps({"type": "result", "uuid": uuid.uuid4().hex, "result": "done"}))
"""


def runs(path: Path) -> list[str]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def tokens(path: Path) -> list[str]:
    """Which of the test's tokens each run received, in order."""
    found = []
    for prompt in runs(path):
        found.append(",".join(t for t in ("tok-one", "tok-two", "tok-three") if t in prompt))
    return found


@pytest.fixture
def headless(work: Work) -> Any:
    script = work.env.root / "headless_agent.py"
    script.write_text(SCRIPT)
    out = work.env.root / "prompts.jsonl"
    work.configure(
        harnesses={
            "fake": {"adapter": "command", "headless": [sys.executable, str(script), str(out)]}
        },
        routing={"defaultHarness": "fake", "runner": "process"},
        budgets={"maxTurns": 1},
        attention={"pollSeconds": 0.1},
    )
    d = Daemon(work)
    d.start()
    yield d, out
    d.stop()


def test_close_and_start_do_not_reset_a_work_items_budget_and_kept_messages_carry_over(
    headless: tuple[Daemon, Path],
) -> None:
    d, out = headless

    def shown() -> dict[str, Any]:
        return d.api("GET", f"/sessions/{REF}").json()  # type: ignore[no-any-return]

    first = d.api("POST", "/sessions", json={"ref": REF, "prompt": "tok-one"})
    assert first.status_code == 200 and first.json()["action"] == "spawned", first.text
    wait_until(lambda: shown()["hold"] == "over-budget", 30, what="the first session held")
    kept = d.api("POST", f"/sessions/{REF}/messages", json={"text": "tok-two"})
    assert kept.status_code == 200 and "kept" in kept.json()["detail"], kept.text
    closed = d.api("POST", f"/sessions/{REF}/close")
    assert closed.status_code == 200, closed.text

    again = d.api("POST", "/sessions", json={"ref": REF, "prompt": "tok-three"})
    assert again.status_code == 200, again.text
    assert again.json()["action"] == "queued", "the item's budget did not start again"
    second = again.json()["sessionId"]
    assert second != first.json()["sessionId"]
    view = shown()
    assert view["id"] == second and view["hold"] == "over-budget", view
    assert view["status"] == "queued"
    queued = d.api("GET", "/events", params={"type": "dispatch.queued"}).json()
    assert queued[-1]["payload"]["reason"] == "over-budget"
    assert "maxTurns" in queued[-1]["payload"]["detail"]
    assert tokens(out) == ["tok-one"]

    extended = d.api("POST", f"/sessions/{REF}/extend", json={"turns": 5})
    assert extended.status_code == 200, extended.text
    assert extended.json()["overBudget"] is None and extended.json()["extraTurns"] == 5
    wait_until(lambda: len(runs(out)) >= 3, 30, what="the new session's runs")
    assert tokens(out) == ["tok-one", "tok-three", "tok-two"], "its own prompt, then the kept"
    assert shown()["status"] == "active" and shown()["hold"] is None

    def item_turns() -> int:
        usage = d.api("GET", "/usage", params={"workItem": REF}).json()
        return int(usage["item"]["turns"])

    wait_until(lambda: item_turns() == 3, 30, what="three turns metered for the item")
    assert shown()["usage"]["turns"] == 2 and shown()["hold"] is None, "3 of 1 + 5 allowed"


@pytest.fixture
def standing_daemon(work: Work) -> Any:
    work.configure(
        attention=ATTENTION,
        sessions={"suspendAfterMinutes": 0},
        budgets={"maxTurns": 1},
        standing={"enabled": True},
        tmux={"resumeProbeSeconds": 0.2},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()
    work.cli("standing", "stop")


def test_a_recreated_standing_session_keeps_its_usage_and_its_hold(
    standing_daemon: Daemon,
) -> None:
    d, work = standing_daemon, standing_daemon.work

    def view() -> dict[str, Any]:
        return d.api("GET", "/standing/ops").json()  # type: ignore[no-any-return]

    created = d.api("POST", "/standing", json={"name": "ops", "prompt": "watch"})
    assert created.status_code == 201, created.text
    assert created.json()["start"]["outcome"] == "started"
    # the budget is checked at each turn's end (and when the meter reads new usage): the turn
    # is written after the first turn ended, and the next turn's end stops the agent
    wait_until(lambda: view()["attention"]["state"] == "waiting", 30, what="the first turn over")
    ctx = open_ctx(work.env.config_path)
    with ctx.db.transaction() as tx:  # what the meter reads from a harness: one turn
        turn = usage_store.Entry("t:1", usage_store.TURN)
        usage_store.add_entries(tx, "standing:ops", [turn], "2026-01-01", time.time())
    said = d.api("POST", "/standing/ops/messages", json={"text": "next"})  # refused when the
    # spend pass woken by that turn's end ran after the write: the agent is stopped already
    assert said.status_code == 200 or "standing extend ops" in said.text, said.text
    wait_until(lambda: view()["status"] == "over-budget", 30, what="the budget stop")

    deleted = d.api("DELETE", "/standing/ops")
    assert deleted.status_code == 200, deleted.text
    again = d.api("POST", "/standing", json={"name": "ops", "prompt": "watch"})
    assert again.status_code == 201, again.text
    start = again.json()["start"]
    assert start["outcome"] == "failed" and "standing extend ops" in start["error"]
    found = view()
    assert found["status"] == "over-budget" and found["hold"] == "over-budget", found
    assert found["usage"]["turns"] == 1
    said = d.api("POST", "/standing/ops/messages", json={"text": "hello"})
    assert said.status_code == 409 and "standing extend ops" in said.text
    started = d.api("POST", "/standing/ops/start")
    assert started.status_code == 409, started.text
    done = d.api("POST", "/standing/ops/extend", json={"turns": 1})
    assert done.status_code == 200 and done.json()["overBudget"] is None, done.text
    assert d.api("POST", "/standing/ops/start").status_code == 200
    wait_until(lambda: view()["status"] == "running", 30, what="running again")
