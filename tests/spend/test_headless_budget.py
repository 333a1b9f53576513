"""A headless (process runner) agent whose runs print Claude Code's ``stream-json``: the meter
reads the run's transcript, ``maxTurns`` holds the next comment (kept, not run), and
``sessions extend --turns`` runs it — through the real CLI and the spend pass the daemon runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.fakes import payloads as P
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.work_items import spend

REF = "github:octo/repo#15"
SCRIPT = r"""
import json, sys, uuid
out, prompt = sys.argv[1], sys.stdin.read()
with open(out, "a") as handle:
    handle.write(json.dumps(prompt) + "\n")
mid = "msg_" + uuid.uuid4().hex
usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100}
print(json.dumps({"type": "system", "subtype": "init"}))
for output in (1, 5):
    figures = {**usage, "output_tokens": output}
    message = {"id": mid, "role": "assistant", "model": "m-1", "usage": figures}
    print(json.dumps({"type": "assistant", "message": message}))
print(json.dumps({"type": "result", "uuid": uuid.uuid4().hex, "result": "done"}))
"""


def prompts(path: Path) -> list[str]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_headless_runs_metered_held_by_max_turns_and_extended(work: Work) -> None:
    script = work.env.root / "headless_agent.py"
    script.write_text(SCRIPT)
    out = work.env.root / "prompts.jsonl"
    work.env.write_config(
        harnesses={
            "fake": {"adapter": "command", "headless": [sys.executable, str(script), str(out)]}
        },
        routing={"defaultHarness": "fake", "authorizedUsers": ["alice"], "runner": "process"},
        budgets={"maxTurns": 1, "prices": {"m-": {"input": 1, "output": 2, "cacheRead": 0.5}}},
    )
    first = work.dispatch("issue_comment", P.issue_comment_event("the-loop do tok-one"), "h-1")
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    ctx = open_ctx(work.env.config_path)
    spend.spend_pass(ctx, spend.SpendWatch())
    shown = work.session_json(REF)
    assert shown["usage"]["turns"] == 1 and shown["usage"]["outputTokens"] == 5
    assert shown["usage"]["cacheReadTokens"] == 100
    assert shown["usage"]["costUsd"] == (10 * 1 + 5 * 2 + 100 * 0.5) / 1e6
    assert shown["hold"] == "over-budget"

    kept = work.dispatch("issue_comment", P.issue_comment_event("tok-two"), "h-2")
    assert kept.exit_code == 0 and "kept" in kept.stdout, kept.stdout
    assert len(prompts(out)) == 1

    extended = work.cli("sessions", "extend", REF, "--turns", "1", "--format", "json")
    assert extended.exit_code == 0, extended.stdout + extended.stderr
    done = json.loads(extended.stdout)
    assert done["overBudget"] is None and done["extraTurns"] == 1
    runs = prompts(out)
    assert len(runs) == 2 and "tok-two" in runs[1]
    spend.spend_pass(ctx, spend.SpendWatch())
    assert work.session_json(REF)["hold"] == "over-budget", "two turns reach 1 + 1"
    refused = work.cli("sessions", "extend", REF)
    assert refused.exit_code != 0 and "--usd N or --turns N" in refused.stderr
    from the_loop import TheLoop

    loop = TheLoop(work.env.config_path)
    report = loop.usage(REF)
    assert report.item is not None and report.item.turns == 2 and report.days[0].turns == 2
    assert loop.sessions.extend(REF, turns=1).over_budget is None


def test_an_over_budget_stop_is_said_once_in_the_bound_slack_thread(work: Work) -> None:
    script = work.env.root / "headless_agent.py"
    script.write_text(SCRIPT)
    work.env.write_config(
        harnesses={
            "fake": {
                "adapter": "command",
                "headless": [sys.executable, str(script), str(work.env.root / "p.jsonl")],
            }
        },
        routing={"defaultHarness": "fake", "authorizedUsers": ["alice"], "runner": "process"},
        budgets={"maxTurns": 1},
        slack={"enabled": True, "workItems": True, "channel": "C0AGENTS"},
    )
    first = work.dispatch("issue_comment", P.issue_comment_event("the-loop do tok-one"), "s-1")
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    ctx = open_ctx(work.env.config_path)
    for _ in range(2):  # a second pass finds the hold already set: no second notice
        spend.spend_pass(ctx, spend.SpendWatch())
    assert work.session_json(REF)["hold"] == "over-budget"
    listed = work.cli("outbox", "list", "--format", "json")
    assert listed.exit_code == 0, listed.stderr
    texts = [json.dumps(row) for row in json.loads(listed.stdout)]
    said = [t for t in texts if "stopped at the end of its turn" in t and "C0AGENTS" in t]
    assert len(said) == 1, texts
