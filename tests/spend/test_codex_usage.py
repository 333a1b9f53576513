"""The real Codex CLI (pinned in package.json), interactive in tmux under the daemon, against
the fake Responses API answering with known usage figures: its turn-complete ``notify`` names
the thread, the meter reads the thread's rollout file (``$CODEX_HOME/sessions/…``), and the
session's tokens, turns and cost are exactly what the fake sent in the conversation; a
per-session budget stops it after the turn that crossed it (pane dead, ``over-budget``); the
thread its notify named is recorded as its conversation, so ``extend`` resumes that thread
(``codex resume``) and delivers the comment kept meanwhile."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon, served
from tests.fakes import payloads as P
from tests.fakes.fake_openai import MODEL, FakeOpenAI, ResponsesRequest
from tests.harness.agent_clis import REPO
from tests.helpers import wait_until
from tests.work import Work

CODEX_BIN = REPO / "node_modules" / ".bin" / "codex"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(300),
    pytest.mark.skipif(
        not CODEX_BIN.exists(), reason=f"Codex CLI not installed at {CODEX_BIN} (make setup)"
    ),
]
REF = "github:octo/repo#41"
PRICE = {"input": 2.0, "output": 10.0, "cacheRead": 0.5}
TURN = {"input_tokens": 1000, "cached": 300, "output_tokens": 60}
TURN_USD = (700 * 2.0 + 60 * 10.0 + 300 * 0.5) / 1_000_000  # 0.00215


def usage(request: ResponsesRequest, text: str) -> dict[str, Any]:
    if not request.is_conversation:  # the TUI's side requests (a title) are not in the thread
        return {"input_tokens": 5, "output_tokens": 1, "total_tokens": 6}
    return {
        "input_tokens": TURN["input_tokens"],
        "input_tokens_details": {"cached_tokens": TURN["cached"]},
        "output_tokens": TURN["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": TURN["input_tokens"] + TURN["output_tokens"],
    }


@pytest.fixture
def daemon(work: Work) -> Iterator[tuple[Daemon, FakeOpenAI]]:
    with FakeOpenAI(usage=usage) as api:
        env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
        work.env.write_config(
            harnesses={"codex": {"binary": str(CODEX_BIN), "env": env}},
            routing={"defaultHarness": "codex", "authorizedUsers": ["alice"]},
            tmux={"resumeProbeSeconds": 0.5},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
            github={"enabled": True},
            budgets={"prices": {MODEL: PRICE}, "perSessionUsd": 1.5 * TURN_USD},
        )
        with served(work) as d:
            yield d, api


def session(d: Daemon) -> dict[str, Any]:
    found = d.api("GET", f"/sessions/{REF.replace('#', '%23')}")
    return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]


def test_interactive_codex_usage_is_metered_and_budgeted(
    work: Work, daemon: tuple[Daemon, FakeOpenAI]
) -> None:
    d, api = daemon
    first = P.issue_comment_event("the-loop do count the stars", number=41)
    assert d.post("issue_comment", first, "cxu-1").status_code == 202
    wait_until(lambda: session(d).get("usage", {}).get("turns") == 1, 150, what="turn 1 metered")
    found = session(d)
    assert found["hold"] is None, "one turn is under the budget"
    assert len(api.conversation_turns()) == 1
    assert found["usage"]["inputTokens"] == TURN["input_tokens"] - TURN["cached"]
    assert found["usage"]["cacheReadTokens"] == TURN["cached"]
    assert found["usage"]["outputTokens"] == TURN["output_tokens"]
    assert found["usage"]["cacheCreationTokens"] == 0
    assert found["usage"]["models"] == [MODEL] and found["usage"]["unpricedModels"] == []
    assert found["usage"]["costUsd"] == pytest.approx(TURN_USD, abs=1e-6)

    follow = P.issue_comment_event("also the planets", number=41)
    assert d.post("issue_comment", follow, "cxu-2").status_code == 202
    wait_until(lambda: session(d).get("hold") == "over-budget", 150, what="the budget stop")
    found = session(d)
    sent = [api.sent_usage[r.seq] for r in api.conversation_turns()]
    assert len(sent) == 2
    assert found["usage"]["turns"] == 2
    assert found["usage"]["inputTokens"] == sum(
        u["input_tokens"] - u["input_tokens_details"]["cached_tokens"] for u in sent
    )
    assert found["usage"]["outputTokens"] == sum(u["output_tokens"] for u in sent)
    assert found["usage"]["costUsd"] == pytest.approx(2 * TURN_USD, abs=1e-6)
    wait_until(lambda: work.pane_dead(found["tmuxTarget"]) == "1", 30, what="the pane dead")
    stopped = d.api("GET", "/events", params={"type": "session.over_budget"}).json()
    assert len(stopped) == 1 and "perSessionUsd" in stopped[0]["payload"]["reason"]
    (rollout,) = (work.env.root / "codex-home").glob("sessions/*/*/*/rollout-*.jsonl")
    thread = rollout.stem[-36:]
    assert found["harnessSessionId"] == thread, "the thread its notify named is its conversation"

    kept = P.issue_comment_event("THIRD-PROMPT now", number=41)
    assert d.post("issue_comment", kept, "cxu-3").status_code == 202
    wait_until(lambda: d.api("GET", "/events", params={"type": "session.held"}).json(), 60)
    done = d.api("POST", f"/sessions/{found['id']}/extend", json={"usd": 1})
    assert done.status_code == 200 and done.json()["overBudget"] is None, done.text
    wait_until(
        lambda: any("THIRD-PROMPT" in (r.prompt or "") for r in api.conversation_turns()),
        150,
        what="the kept comment delivered after extend",
    )
    resumed = api.conversation_turns()[-1].user_texts()
    assert any("count the stars" in t for t in resumed[:-1]), "the same thread, resumed"
    assert any("also the planets" in t for t in resumed[:-1]) and "THIRD-PROMPT" in resumed[-1]
    respawned = d.api("GET", "/events", params={"type": "session.respawned"}).json()
    assert respawned and respawned[0]["payload"]["resumed"] is True
    assert session(d)["harnessSessionId"] == thread
