"""The real Gemini CLI (pinned in package.json), interactive in tmux under the daemon, against
the fake Gemini API answering with known usage figures. Gemini has no hooks to name a
transcript: the meter finds the chat log it keeps for the conversation the-loop chose
(``~/.gemini/tmp/<project>/chats/session-…-<id>.jsonl``), and the session's tokens, turns and
cost are what the fake sent in the conversation; a per-session budget stops it after the turn
that crossed it (pane dead, ``over-budget``). Before, a Gemini session showed zeros, and a
budget never stopped one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_gemini import FakeGemini, GeminiRequest
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
]
REF = "local:gemu"
MODEL = "gemini-2.5-pro"
PRICE = {"input": 2.0, "output": 10.0, "cacheRead": 0.5}
TURN = {
    "promptTokenCount": 1000,
    "cachedContentTokenCount": 300,
    "candidatesTokenCount": 60,
    "thoughtsTokenCount": 20,
    "totalTokenCount": 1080,
}
TURN_USD = (700 * 2.0 + 80 * 10.0 + 300 * 0.5) / 1_000_000  # 0.00235: thoughts are output


def usage(request: GeminiRequest) -> dict[str, int] | None:
    """The figures of a conversation turn; the CLI's side requests keep the fake's count."""
    return TURN if request.is_conversation else None


@pytest.fixture
def daemon(work: Work) -> Iterator[tuple[Daemon, FakeGemini]]:
    with FakeGemini(usage=usage) as api:
        env = api.gemini_env(work.env.root / "gemini-home")
        work.configure(
            harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env, "model": MODEL}},
            routing={"defaultHarness": "gemini"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
            budgets={"prices": {MODEL: PRICE}, "perSessionUsd": 1.5 * TURN_USD},
        )
        with served(work) as d:
            yield d, api


def session(d: Daemon) -> dict[str, Any]:
    found = d.api("GET", f"/sessions/{REF}")
    return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]


def test_interactive_gemini_usage_is_metered_and_budgeted(
    work: Work, daemon: tuple[Daemon, FakeGemini]
) -> None:
    d, api = daemon
    started = work.cli("sessions", "start", REF, "--prompt", "count the stars")
    assert started.exit_code == 0, started.stderr
    metered = wait_until(
        lambda: (found := session(d)).get("usage", {}).get("outputTokens") and found,
        120,
        what="turn 1 metered",
    )
    found = session(d)
    assert found["usage"] == metered["usage"], "nothing counted twice"
    assert found["usage"]["turns"] == 1
    assert found["hold"] is None, "one turn is under the budget"
    assert len(api.conversation_turns()) == 1
    assert found["usage"]["inputTokens"] == 700
    assert found["usage"]["cacheReadTokens"] == 300
    assert found["usage"]["outputTokens"] == 80
    assert found["usage"]["models"] == [MODEL] and found["usage"]["unpricedModels"] == []
    assert found["usage"]["costUsd"] == pytest.approx(TURN_USD, abs=1e-6)

    assert work.cli("sessions", "say", REF, "-t", "also the planets").exit_code == 0
    wait_until(lambda: session(d).get("hold") == "over-budget", 120, what="the budget stop")
    found = session(d)
    assert len(api.conversation_turns()) == 2
    assert found["usage"]["turns"] == 2
    assert found["usage"]["outputTokens"] == 160
    assert found["usage"]["costUsd"] == pytest.approx(2 * TURN_USD, abs=1e-6)
    wait_until(lambda: work.pane_dead(found["tmuxTarget"]) == "1", 30, what="the pane dead")
    stopped = d.api("GET", "/events", params={"type": "session.over_budget"}).json()
    assert len(stopped) == 1 and "perSessionUsd" in stopped[0]["payload"]["reason"]


def test_a_gemini_model_without_a_price_is_told_once(work: Work) -> None:
    """The pinned Gemini's model has no price here: a dollar budget cannot stop it, and the
    daemon says so once (``session.unpriced``), not at every turn."""
    with FakeGemini(usage=usage) as api:
        env = api.gemini_env(work.env.root / "gemini-home")
        work.configure(
            harnesses={"gemini": {"binary": str(GEMINI_BIN), "env": env, "model": "gemini-x-9"}},
            routing={"defaultHarness": "gemini"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
            budgets={"perSessionUsd": 0.000001},
        )
        with served(work) as d:
            assert work.cli("sessions", "start", REF, "--prompt", "count").exit_code == 0
            wait_until(lambda: session(d).get("usage", {}).get("outputTokens"), 120, what="1")
            assert work.cli("sessions", "say", REF, "-t", "again").exit_code == 0
            wait_until(lambda: session(d).get("usage", {}).get("turns") == 2, 120, what="2")
            work.wait_attention(REF, "waiting", 60)
            told = work.events("session.unpriced")
            assert [e["payload"] for e in told] == [
                {"model": "gemini-x-9", "budgets": "perSessionUsd"}
            ], told
            assert session(d)["hold"] is None, "an unpriced model counts no dollars"
