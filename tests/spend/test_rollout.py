"""Interactive Codex usage on real files and a real SQLite database: the rollout lines the
pinned Codex CLI (0.171.0) writes (the shapes below are copied from a rollout file it wrote
against the fake Responses API, trimmed of fields the meter does not read) are metered per
model response, priced by the turn's model even when a read starts after the ``turn_context``
line; ``token_count`` events (running totals of the same figures) are not counted twice; the
turn-complete ``notify`` hook records the thread's rollout file as the agent's transcript.
Also the standing budgets: ``perDayUsd`` counts everything, ``maxTurns`` and extensions apply."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.attention.hooks import hook_env, issue
from tests.conftest import Env
from tests.daemon import Daemon
from the_loop.agent.spend import budgets, meter, usage
from the_loop.context import Ctx, open_ctx
from the_loop.store import usage as store

AGENT = "agent-under-test"
THREAD = "01a232c5-99e6-7c52-869c-3f7fa9cc4474"
MODEL = "fake-codex-model"


def context(turn: str, model: str = MODEL) -> dict[str, Any]:
    return {
        "timestamp": "2026-12-01T18:02:20.631Z",
        "type": "turn_context",
        "payload": {"turn_id": turn, "cwd": "/tmp/cx", "approval_policy": "never", "model": model},
    }


def started(turn: str) -> dict[str, Any]:
    return {
        "timestamp": "2026-12-01T18:02:20.569Z",
        "type": "event_msg",
        "payload": {"type": "task_started", "turn_id": turn, "model_context_window": 258400},
    }


def figures(inp: int, cached: int, written: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "cache_write_input_tokens": written,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
        "total_tokens": inp + out,
    }


def record(turn: str, response: str, **kw: int) -> dict[str, Any]:
    return {
        "timestamp": "2026-12-01T18:02:20.700Z",
        "type": "token_usage_record",
        "payload": {
            "thread_id": THREAD,
            "turn_id": turn,
            "session_id": THREAD,
            "response_id": response,
            "usage": figures(**kw),
            "turn_token_usage": figures(**kw),
        },
    }


def token_count(**kw: int) -> dict[str, Any]:
    return {
        "timestamp": "2026-12-01T18:02:20.701Z",
        "type": "event_msg",
        "payload": {
            "type": "token_count",
            "info": {"total_token_usage": figures(**kw), "last_token_usage": figures(**kw)},
        },
    }


def lines(*entries: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


@pytest.fixture
def ctx(loop_env: Env) -> Ctx:
    loop_env.write_config(
        budgets={"prices": {MODEL: {"input": 2, "output": 10, "cacheCreation": 4, "cacheRead": 1}}}
    )
    return open_ctx(loop_env.config_path)


def test_rollout_usage_per_response_priced_by_the_turns_model(ctx: Ctx, tmp_path: Path) -> None:
    path = tmp_path / f"rollout-2026-12-01T18-02-20-{THREAD}.jsonl"
    path.write_text(
        lines(
            {"timestamp": "…", "type": "session_meta", "payload": {"id": THREAD}},
            started("turn-1"),
            context("turn-1"),
            record("turn-1", "resp_1", inp=1000, cached=300, written=100, out=50),
            token_count(inp=1000, cached=300, written=100, out=50),
            {"type": "event_msg", "payload": {"type": "task_complete", "turn_id": "turn-1"}},
            started("turn-2"),
            context("turn-2"),
        )
    )
    assert meter.read_source(ctx, AGENT, path) == 3, "one response and two turns"
    with path.open("a") as handle:  # the next read starts after turn 2's turn_context
        handle.write(
            lines(
                record("turn-2", "resp_2", inp=400, cached=0, written=0, out=10),
                token_count(inp=1400, cached=300, written=100, out=60),
            )
        )
    assert meter.read_source(ctx, AGENT, path) == 1
    got = usage.of_agent(ctx, AGENT)
    assert (got.input_tokens, got.cache_read_tokens, got.cache_creation_tokens) == (1000, 300, 100)
    assert (got.output_tokens, got.turns, got.models) == (60, 2, [MODEL])
    assert got.cost_usd == pytest.approx((1000 * 2 + 300 * 1 + 100 * 4 + 60 * 10) / 1e6)
    path.write_text(path.read_text())  # rewritten the same: read again, nothing counts twice
    meter.read_source(ctx, AGENT, path)
    assert usage.of_agent(ctx, AGENT) == got


def test_codex_notify_records_the_threads_rollout(
    loop_env: Env, daemon: Daemon, tmp_path: Path
) -> None:
    ctx = open_ctx(loop_env.config_path)
    home = tmp_path / "codex-home"
    older = home / "sessions" / "2026" / "11" / "30"
    newer = home / "sessions" / "2026" / "12" / "01"
    for day in (older, newer):
        day.mkdir(parents=True)
    (newer / "rollout-2026-12-01T10-00-00-0000-other.jsonl").write_text("")
    rollout = older / f"rollout-2026-11-30T23-59-00-{THREAD}.jsonl"
    rollout.write_text("")
    data = {"type": "agent-turn-complete", "thread-id": THREAD, "last-assistant-message": "hi"}
    done = subprocess.run(
        [sys.executable, "-m", "the_loop", "hook", "codex-notify", json.dumps(data)],
        env=hook_env(loop_env, issue(loop_env, root=home)),  # the agent's CODEX_HOME
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and not done.stderr, done.stderr
    assert store.transcripts(ctx.db.connect(), [AGENT]) == {AGENT: str(rollout)}


def test_standing_budgets_day_counts_everything_turns_and_extensions(loop_env: Env) -> None:
    loop_env.write_config(
        budgets={"prices": {"m": {"input": 1_000_000, "output": 0}}, "perDayUsd": 10, "maxTurns": 2}
    )
    ctx = open_ctx(loop_env.config_path)
    now, day = time.time(), usage.today()
    agent = "standing:ops"
    with ctx.db.transaction() as tx:
        store.add_entries(
            tx, agent, [store.Entry("m:1", store.MESSAGE, "m", input_tokens=4)], day, now
        )
        store.add_entries(tx, agent, [store.Entry("t:1", store.TURN)], day, now)
    assert budgets.reached(ctx, agent, None) is None
    with ctx.db.transaction() as tx:  # another agent's spend counts for the day
        store.add_entries(
            tx, "s9", [store.Entry("m:2", store.MESSAGE, "m", input_tokens=6)], day, now
        )
    assert "perDayUsd" in (budgets.reached(ctx, agent, None) or "")
    with ctx.db.transaction() as tx:
        store.extend(tx, agent, 1.0, 0)
        store.add_entries(tx, agent, [store.Entry("t:2", store.TURN)], day, now)
    assert "maxTurns 2" in (budgets.reached(ctx, agent, None) or "")
    with ctx.db.transaction() as tx:
        store.extend(tx, agent, 0.0, 1)
    assert budgets.reached(ctx, agent, None) is None
