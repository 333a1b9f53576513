"""The real Claude Code CLI under the daemon, against the fake Messages API answering with known
usage figures and the fake GitHub (polled): the meter's tokens, turns and cost are exactly what
the fake sent; a per-session budget stops the agent after the turn that crossed it (pane dead,
``over-budget``), one notice is posted, a further comment is kept and not delivered, and
``extend`` resumes the same conversation (the fake sees the earlier prompts) and delivers it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.claude_daemon import start_claude_daemon
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
REPO = "octo/repo"
REF = "github:127.0.0.1/octo/repo#1"
MODEL = "claude-sonnet-4-5"
TURN = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 5000,
}
SIDE = {
    "input_tokens": 7,
    "output_tokens": 3,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
PRICE = {"input": 3.0, "output": 15.0, "cacheCreation": 3.75, "cacheRead": 0.3}
TURN_USD = (1000 * 3.0 + 200 * 15.0 + 300 * 3.75 + 5000 * 0.3) / 1_000_000  # 0.008625
NOTICE = "stopped at the end of its turn"


def usage_of(request: RecordedRequest) -> dict[str, int]:
    return TURN if request.is_conversation else SIDE


def reply(request: RecordedRequest) -> str:
    return f"FAKE-REPLY-{request.seq}" if request.is_conversation else "a title"


@pytest.fixture
def setup(work: Work, loop_env: Env) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic]]:
    with FakeGitHub() as gh, FakeAnthropic(reply=reply, usage=usage_of, model=MODEL) as api:
        daemon = start_claude_daemon(
            work,
            loop_env,
            gh,
            api,
            ["alice"],
            model=MODEL,
            attention={"pollSeconds": 0.1},
            budgets={"prices": {"claude-sonnet-4": PRICE}, "perSessionUsd": 1.5 * TURN_USD},
        )
        gh.add_comment(REPO, 1, "the-loop do FIRST-PROMPT", author="alice")
        try:
            yield daemon, gh, api
        finally:
            daemon.stop()


def session(daemon: Daemon) -> dict[str, Any]:
    return daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()  # type: ignore[no-any-return]


def state(daemon: Daemon) -> str:
    found = daemon.api("GET", f"/attention/{quote(REF, safe=':/')}")
    return str(found.json().get("state")) if found.status_code == 200 else ""


def notices(gh: FakeGitHub) -> list[str]:
    return [c["body"] for c in gh.comments(REPO, 1) if NOTICE in c["body"]]


def prompted(api: FakeAnthropic, text: str) -> list[RecordedRequest]:
    return [r for r in api.conversation_requests() if text in (r.prompt or "")]


def sent(api: FakeAnthropic) -> dict[str, int]:
    """What the fake sent in the conversation turns, summed per kind."""
    totals = dict.fromkeys(TURN, 0)
    for request in api.conversation_requests():
        for kind, value in api.sent_usage[request.seq].items():
            totals[kind] += value
    return totals


def test_meter_budget_stop_notice_kept_comment_and_extend(
    setup: tuple[Daemon, FakeGitHub, FakeAnthropic], work: Work
) -> None:
    daemon, gh, api = setup
    wait_until(lambda: state(daemon) == "waiting" and prompted(api, "FIRST-PROMPT"), 120)
    wait_until(lambda: session(daemon)["usage"]["turns"] == 1, 30, what="the first turn metered")
    assert session(daemon)["hold"] is None, "one turn is under the budget"

    gh.add_comment(REPO, 1, "SECOND-PROMPT please", author="alice")
    wait_until(lambda: session(daemon)["hold"] == "over-budget", 120, what="the budget stop")
    found = session(daemon)
    figures = sent(api)
    assert len(api.conversation_requests()) == 2
    assert found["usage"]["inputTokens"] == figures["input_tokens"] == 2000
    assert found["usage"]["outputTokens"] == figures["output_tokens"] == 400
    assert found["usage"]["cacheCreationTokens"] == figures["cache_creation_input_tokens"]
    assert found["usage"]["cacheReadTokens"] == figures["cache_read_input_tokens"] == 10000
    assert found["usage"]["turns"] == 2
    assert found["usage"]["costUsd"] == pytest.approx(2 * TURN_USD, abs=1e-6)
    assert found["usage"]["models"] == [MODEL] and found["usage"]["unpricedModels"] == []
    assert state(daemon) == "over-budget"
    wait_until(lambda: work.pane_dead(found["tmuxTarget"]) == "1", 30, what="the pane dead")
    wait_until(lambda: notices(gh), 30, what="the budget notice")

    gh.add_comment(REPO, 1, "THIRD-PROMPT now", author="alice")
    wait_until(
        lambda: daemon.api("GET", "/events", params={"type": "session.held"}).json(),
        30,
        what="the third comment kept",
    )
    assert not prompted(api, "THIRD-PROMPT"), "a comment to a session over budget is kept"
    assert work.pane_dead(found["tmuxTarget"]) == "1"

    done = daemon.api("POST", f"/sessions/{found['id']}/extend", json={"usd": 1})
    assert done.status_code == 200, done.text
    assert done.json()["overBudget"] is None and done.json()["extraUsd"] == 1
    wait_until(lambda: prompted(api, "THIRD-PROMPT"), 120, what="the kept comment delivered")
    resumed = prompted(api, "THIRD-PROMPT")[0]
    earlier = " ".join(resumed.user_texts())
    assert "FIRST-PROMPT" in earlier and "SECOND-PROMPT" in earlier, "the same conversation"
    assert len(prompted(api, "THIRD-PROMPT")) == 1
    after = session(daemon)
    assert after["hold"] is None and after["harnessSessionId"] == found["harnessSessionId"]
    # the turn's end and its message's usage are metered as they reach the transcript: both
    wait_until(
        lambda: (
            (session(daemon)["usage"]["turns"], session(daemon)["usage"]["inputTokens"])
            == (3, 3000)
        ),
        60,
        what="the third turn metered",
    )
    assert len(notices(gh)) == 1
    report = daemon.api("GET", "/usage", params={"workItem": REF}).json()
    assert report["item"]["turns"] == 3 and report["item"]["inputTokens"] == 3000
    assert report["item"]["costUsd"] == pytest.approx(3 * TURN_USD, abs=1e-6)
    assert report["days"][0]["costUsd"] == report["item"]["costUsd"]
    respawned = daemon.api("GET", "/events", params={"type": "session.respawned"}).json()
    assert respawned and respawned[0]["payload"]["resumed"] is True
