"""Question dialogs with the real Claude Code against the fake Messages API: its
``AskUserQuestion`` dialog is a question to a person (``needs-input`` with the numbered choices),
never a permission; a comment sent meanwhile is held; ``the-loop answer ID N`` picks a choice
and ``the-loop answer <id> <text>`` types an answer — each reaches the model as the tool's
result, is reported done only once the dialog is gone, and is listed by ``attention history``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest

from tests.attention.test_claude_attention import REF, REPO, attention_of, comments, wait_state
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
QUESTION = {
    "questions": [
        {
            "question": "Which database?",
            "header": "DB",
            "multiSelect": False,
            "options": [
                {"label": "SQLite", "description": "embedded"},
                {"label": "PostgreSQL", "description": "a server"},
            ],
        }
    ]
}


def reply(request: RecordedRequest) -> str | ToolUse:
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return "THANKS-FOR-THE-ANSWER"
    prompt = request.prompt or ""
    for n in (1, 2):
        if f"ASK-ME-{n}" in prompt:
            return ToolUse("AskUserQuestion", QUESTION, f"toolu_ask_{n}")
    return f"FAKE-REPLY-{request.seq}"


@pytest.fixture
def setup(work: Work, loop_env: Env) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic]]:
    attention = {"notifyAfterSeconds": 1, "pollSeconds": 0.1}
    with claude_item(work, loop_env, reply, ["alice"], attention=attention) as running:
        yield running


def _turn_over(daemon: Daemon, api: FakeAnthropic) -> bool:
    """The agent waits after the turn of the newest request: its Stop carried the fake's reply
    to that request (a `waiting` left from the turn before is not it: the next comment would
    reach Claude Code mid-turn, passed on inside a reminder the fake does not read)."""
    last = api.last_conversation_request()
    said = reply(last) if last is not None else None
    found = attention_of(daemon)
    return (
        found.get("state") == "waiting"
        and found.get("signal") == "claude-hook:Stop"
        and isinstance(said, str)
        and found.get("lastMessage") == said
    )


def answer_of(api: FakeAnthropic, tool_id: str) -> str:
    last = api.last_conversation_request()
    for result in last.tool_results() if last else []:
        if result.get("tool_use_id") == tool_id:
            return json.dumps(result.get("content"))
    return ""


@pytest.mark.timeout(240)
def test_a_question_dialog_is_answered_by_choice_and_by_text(
    setup: tuple[Daemon, FakeGitHub, FakeAnthropic],
) -> None:
    daemon, gh, api = setup
    wait_state(daemon, "waiting", 120, "claude-hook:Stop")
    gh.add_comment(REPO, 1, "please ASK-ME-1 now", author="alice")
    asked = wait_state(daemon, "needs-input")["prompt"]
    assert asked["kind"] == "question" and asked["tool"] == "AskUserQuestion"
    assert "Which database?" in asked["text"] and "2. PostgreSQL" in asked["text"]
    allowed = daemon.work.cli("sessions", "allow", REF, "--prompt", asked["id"])
    assert allowed.exit_code != 0 and "answer" in allowed.stderr, allowed.stderr

    gh.add_comment(REPO, 1, "HELD-WHILE-ASKING", author="alice")
    wait_until(
        lambda: daemon.api("GET", "/events", params={"type": "session.held"}).json(),
        30,
        what="the held comment",
    )
    assert attention_of(daemon)["prompt"]["id"] == asked["id"]

    answered = daemon.work.cli("answer", asked["id"], "2")  # the prompt names its session
    assert answered.exit_code == 0, answered.stderr
    assert answered.stdout.startswith(f"answered {asked['id']} with ") and REF in answered.stdout
    wait_until(lambda: answer_of(api, "toolu_ask_1"), 30, what="the chosen answer")
    assert "PostgreSQL" in answer_of(api, "toolu_ask_1")
    wait_until(
        lambda: "HELD-WHILE-ASKING" in json.dumps(api.last_conversation_request().messages),  # type: ignore[union-attr]
        60,
        what="the held comment delivered",
    )

    wait_until(lambda: _turn_over(daemon, api), 60, what="the held comment's turn over")
    gh.add_comment(REPO, 1, "now ASK-ME-2", author="alice")
    second = wait_state(daemon, "needs-input")["prompt"]
    wait_until(lambda: comments(gh, second["id"]), 20, what="the question's notice")
    notice = comments(gh, second["id"])[0]
    assert "the-loop answer" in notice and "Which database?" in notice
    gh.add_comment(REPO, 1, f"the-loop answer {second['id']} MySQL please", author="alice")
    wait_until(lambda: answer_of(api, "toolu_ask_2"), 40, what="the typed answer")
    assert "MySQL please" in answer_of(api, "toolu_ask_2")

    def answered() -> dict[str, Any] | None:  # recorded once the dialog is seen gone
        history = daemon.api("GET", f"/attention-history/{quote(REF, safe=':/')}").json()
        by_id: dict[str, Any] = {p["id"]: p for p in history}
        return by_id if by_id[second["id"]]["answeredVia"] else None

    by_id = wait_until(answered, 30, what="the typed answer recorded")
    assert by_id[asked["id"]]["outcome"] == "answered: 2. PostgreSQL"
    assert by_id[second["id"]]["answeredVia"] == "github-comment"
    assert by_id[second["id"]]["decision"] is None
