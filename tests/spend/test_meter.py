"""The meter and the prices on real files and a real SQLite database: one message written on
several transcript lines counts once with its final figures, a half-written line waits for the
next read, prompts count as turns (tool results and meta lines do not), headless stream-json
and Codex usage events are read too; prices match by the longest prefix, unpriced models are
named; budgets (turns, dollars, extensions); the hook records where the transcript is;
``/proc`` figures for a real process tree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.attention.hooks import hook_env, issue, run_hook
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import DEFAULT_MODEL as FAKE_API_MODEL
from the_loop import events as ev
from the_loop.agent.spend import memory, meter, service, usage
from the_loop.config.spend import BudgetsConfig
from the_loop.context import Ctx, open_ctx
from the_loop.store import attention as attention_store
from the_loop.store import usage as store

AGENT = "agent-under-test"


def assistant(mid: str, model: str, **figures: int) -> dict[str, Any]:
    return {
        "type": "assistant",
        "uuid": f"u-{mid}-{len(figures)}",
        "message": {"id": mid, "role": "assistant", "model": model, "usage": figures},
    }


def prompt(uuid: str, content: Any, **extra: Any) -> dict[str, Any]:
    return {"type": "user", "uuid": uuid, "message": {"role": "user", "content": content}, **extra}


def lines(*entries: dict[str, Any]) -> str:
    return "".join(json.dumps(e) + "\n" for e in entries)


@pytest.fixture
def ctx(loop_env: Env) -> Ctx:
    loop_env.write_config(
        budgets={
            "prices": {
                "claude-sonnet": {
                    "input": 3,
                    "output": 15,
                    "cacheCreation": 3.75,
                    "cacheRead": 0.3,
                },
                "claude-sonnet-4-5": {"input": 1, "output": 1},
            }
        }
    )
    return open_ctx(loop_env.config_path)


def test_one_message_on_several_lines_counts_once_with_its_final_figures(
    ctx: Ctx, tmp_path: Path
) -> None:
    path = tmp_path / "t.jsonl"
    first = assistant("msg_1", "claude-sonnet-4", input_tokens=100, output_tokens=1)
    final = assistant("msg_1", "claude-sonnet-4", input_tokens=100, output_tokens=40)
    path.write_text(
        lines(
            prompt("p1", "hello"),
            first,
            final,
            prompt("p2", [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]),
            prompt("p3", "<command-name>/cost</command-name>"),
            prompt("p4", "meta", isMeta=True),
        )
    )
    assert meter.read_source(ctx, AGENT, path) == 3, "two lines of one message, one turn"
    got = usage.of_agent(ctx, AGENT)
    assert (got.input_tokens, got.output_tokens, got.turns) == (100, 40, 1)
    assert got.cost_usd == pytest.approx((100 * 3 + 40 * 15) / 1e6)
    assert meter.read_source(ctx, AGENT, path) == 0, "nothing new: nothing read"
    assert usage.of_agent(ctx, AGENT).output_tokens == 40


def test_a_half_written_line_is_read_once_it_is_whole(ctx: Ctx, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    whole = json.dumps(assistant("msg_2", "claude-sonnet-4-5", input_tokens=5, output_tokens=7))
    path.write_text(lines(prompt("p1", [{"type": "text", "text": "go"}])) + whole[:20])
    meter.read_source(ctx, AGENT, path)
    assert usage.of_agent(ctx, AGENT).turns == 1 and usage.of_agent(ctx, AGENT).input_tokens == 0
    with path.open("a") as handle:
        handle.write(whole[20:] + "\n")
    meter.read_source(ctx, AGENT, path)
    got = usage.of_agent(ctx, AGENT)
    assert (got.input_tokens, got.output_tokens) == (5, 7)
    assert got.cost_usd == pytest.approx(12 / 1e6), "the longest price prefix wins"


def test_stream_json_and_codex_events_and_unpriced_models(ctx: Ctx, tmp_path: Path) -> None:
    spool = ctx.state_dir / "transcripts"
    spool.mkdir(parents=True, exist_ok=True)
    (spool / f"{AGENT}.jsonl").write_text(
        lines(
            {"type": "system", "subtype": "init"},
            assistant("msg_3", "gpt-x", input_tokens=10, output_tokens=2),
            {"type": "result", "uuid": "r1", "usage": {"input_tokens": 10}},
            {
                "type": "turn.completed",
                "usage": {"input_tokens": 50, "cached_input_tokens": 20, "output_tokens": 4},
            },
        )
    )
    assert meter.meter_agents(ctx, [AGENT, "nobody"]) == [AGENT]
    got = usage.of_agent(ctx, AGENT)
    assert (got.input_tokens, got.cache_read_tokens, got.output_tokens) == (40, 20, 6)
    assert got.turns == 2 and got.unpriced_models == ["gpt-x"]
    assert got.cost_usd is None and got.priced is False, "unknown, not zero"


def test_gemini_chat_log_records(ctx: Ctx, tmp_path: Path) -> None:
    """A Gemini chat log (0.61, one record per line): each prompt of the person's is a turn,
    a tool's answer (a user record of a ``functionResponse``) and the session context in a
    ``$set`` are none; an answer written again with more figures
    counts once with its last; cached input is not input again, thoughts are output and
    tool-use prompts input."""
    log = tmp_path / "session-2026-12-05T13-39-73d8a455.jsonl"
    records = lines(
        {"sessionId": "73d8a455-f247", "kind": "main"},
        {"$set": {"messages": [{"id": "c", "type": "user", "content": [{"text": "<ctx>"}]}]}},
        {"id": "u1", "type": "user", "content": [{"text": "count the stars"}]},
        {"id": "g1", "type": "gemini", "content": "", "model": "gemini-2.5-pro"},
        {
            "id": "g1",
            "type": "gemini",
            "content": "42",
            "model": "gemini-2.5-pro",
            "tokens": {"input": 1000, "output": 60, "cached": 300, "thoughts": 20, "tool": 5},
        },
        {"$set": {"lastUpdated": "2026-12-05T13:39:56.986Z"}},
        {"id": "u2", "type": "user", "content": [{"functionResponse": {"name": "run_shell"}}]},
        {"id": "i1", "type": "info", "content": "Request cancelled."},
    )
    log.write_text(records)
    assert meter.read_source(ctx, AGENT, log) == 2
    got = usage.of_agent(ctx, AGENT)
    assert (got.input_tokens, got.cache_read_tokens, got.output_tokens) == (705, 300, 80)
    assert got.turns == 1 and got.models == ["gemini-2.5-pro"]


def test_prices_by_longest_prefix() -> None:
    budgets = BudgetsConfig.model_validate(
        {"prices": {"a": {"input": 1, "output": 1}, "ab": {"input": 2, "output": 2}}}
    )
    assert budgets.price("abc") == budgets.prices["ab"]
    assert budgets.price("a") == budgets.prices["a"] and budgets.price("b") is None


def test_budgets_turns_dollars_and_extensions(loop_env: Env, tmp_path: Path) -> None:
    from the_loop.store import sessions as session_store
    from the_loop.store.sessions import SessionRecord, SessionStatus
    from the_loop.work_items import spend  # the policy, on a real record

    loop_env.write_config(
        budgets={
            "prices": {"m": {"input": 1_000_000, "output": 0}},
            "perSessionUsd": 10,
            "maxTurns": 3,
        }
    )
    ctx = open_ctx(loop_env.config_path)
    now = time.time()
    rec = SessionRecord(
        id="s1", work_item="github:octo/repo#1", harness="fake", runner="tmux", cwd="",
        status=SessionStatus.active, created_at=now, last_event_at=now,
    )  # fmt: skip
    with ctx.db.transaction() as tx:
        session_store.insert(tx, rec)
        store.add_entries(
            tx, "s1", [store.Entry("m:1", store.MESSAGE, "m", input_tokens=4)], "d", now
        )
    assert spend.over_budget(ctx, rec) is None
    with ctx.db.transaction() as tx:
        store.add_entries(
            tx, "s1", [store.Entry("m:2", store.MESSAGE, "m", input_tokens=6)], "d", now
        )
    assert "perSessionUsd" in (spend.over_budget(ctx, rec) or "")
    with ctx.db.transaction() as tx:
        store.extend(tx, "s1", 5.0, 0)
    assert spend.over_budget(ctx, rec) is None
    turns = [store.Entry(f"t:{n}", store.TURN) for n in range(3)]
    with ctx.db.transaction() as tx:
        store.add_entries(tx, "s1", turns, "d", now)
    assert "maxTurns 3" in (spend.over_budget(ctx, rec) or "")


def test_the_hook_records_the_transcript_path(loop_env: Env, daemon: Daemon) -> None:
    ctx = open_ctx(loop_env.config_path)
    root = loop_env.root / "claude-config"
    path = str(root / "projects" / "-w" / "transcript.jsonl")
    env = hook_env(loop_env, issue(loop_env, root=root))
    done = run_hook(env, {"hook_event_name": "Stop", "transcript_path": path})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert store.transcripts(ctx.db.connect(), [AGENT]) == {AGENT: path}
    # a held state is not overridden by the stopped harness's own hooks
    with ctx.db.transaction() as tx:
        attention_store.set_state(
            tx, AGENT, "suspended", "spend", "idle", now=time.time(), source="spend"
        )
    run_hook(env, {"hook_event_name": "SessionEnd", "transcript_path": path})
    row = attention_store.get(ctx.db.connect(), AGENT)
    assert row is not None and row.state == "suspended"


def test_proc_figures_of_a_real_process_tree() -> None:
    """Resident and anonymous resident memory of a process tree: a child holding 50 MiB it
    wrote counts them in both (anonymous memory is what stopping it gives back)."""
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; b = bytearray(50 << 20); time.sleep(60)"]
    )
    try:

        def figures(name: str, pid: int) -> tuple[float, float]:
            return memory.trees_memory_mb({name: [pid]})[name]

        from tests.helpers import wait_until

        wait_until(lambda: figures("child", child.pid)[1] > 50, 30, what="the child's 50 MiB")
        resident, anonymous = figures("child", child.pid)
        assert resident >= anonymous > 50
        mine = figures("me", os.getpid())  # this process and its child
        assert mine[0] > resident and mine[1] > anonymous
    finally:
        child.kill()
        child.wait()
    available = memory.available_mb()
    assert available is not None and available > 0


def test_builtin_prices_for_the_harnesses_default_models() -> None:
    """Issue 28: Claude Code's, Codex's and Gemini's current models have a built-in estimate;
    an entry of one's own wins over it, and ``defaultPrices: false`` turns them off."""
    budgets = BudgetsConfig()
    for model in (
        FAKE_API_MODEL,
        "claude-sonnet-4-5-20250929",
        "claude-opus-4-5-20251101",
        "claude-haiku-4-5-20251001",
        "gpt-5-codex",
        "gpt-5.1-codex-max",
        "gemini-2.5-pro",
        "gemini-2.5-flash",
    ):
        assert budgets.price(model) is not None, model
    assert budgets.price("mystery-model") is None
    old, new = budgets.price("claude-opus-4-1-20250805"), budgets.price("claude-opus-4-5-20251101")
    assert old is not None and new is not None and (old.input, new.input) == (15, 5)
    own = BudgetsConfig.model_validate({"prices": {"claude": {"input": 1, "output": 2}}})
    assert own.rates("claude-sonnet-4-5") == (1, 2, 0, 0), "one's own price wins"
    assert BudgetsConfig.model_validate({"defaultPrices": False}).price(FAKE_API_MODEL) is None


@pytest.mark.parametrize("budget", [{"perSessionUsd": 1.0}, {}])
def test_a_model_without_a_price_is_told_once_while_a_dollar_budget_is_set(
    loop_env: Env, tmp_path: Path, budget: dict[str, float]
) -> None:
    """An unpriced model's tokens count no dollars, so a dollar budget cannot stop the agent
    that uses it: the spend pass says so once per agent and model (``session.unpriced``), and
    says nothing when no dollar budget is set."""
    loop_env.write_config(budgets={"defaultPrices": True, **budget})
    ctx = open_ctx(loop_env.config_path)
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(lines(assistant("m1", "mystery-model-9", input_tokens=10)))
    assert meter.read_source(ctx, AGENT, transcript) == 1
    watch = service.SpendWatch()
    service.warn_unpriced(ctx, watch, {AGENT})
    transcript.write_text(
        lines(
            assistant("m1", "mystery-model-9", input_tokens=10),
            assistant("m2", "mystery-model-9", input_tokens=20),
        )
    )
    meter.read_source(ctx, AGENT, transcript)
    service.warn_unpriced(ctx, watch, {AGENT})
    told = ev.query(ctx.db, ev.parse_filter(["session.unpriced"]))
    if not budget:
        assert told == []
        return
    assert len(told) == 1, told
    assert told[0].payload == {"model": "mystery-model-9", "budgets": "perSessionUsd"}
    assert told[0].session_id == AGENT and told[0].level == "warning"
