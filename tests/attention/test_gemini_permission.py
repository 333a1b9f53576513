"""Gemini's confirmation dialog is a permission, with the real Gemini CLI (pinned) against the
fake Gemini API: its "Allow execution of [Shell]?" dialog makes the session
``needs-permission`` through the built-in screen patterns; a message sent meanwhile is held,
not pasted into the dialog (where its Enter picked "1. Allow once": the command ran with
nobody's approval); ``sessions allow`` runs it and the held message follows; a second dialog
("Apply this change?") denied with ``sessions deny`` writes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.daemon import Daemon, served
from tests.fakes.fake_gemini import FakeGemini, FunctionCall, GeminiRequest
from tests.gemini_daemon import NEEDS_GEMINI, gemini_daemon
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = NEEDS_GEMINI
REF = "local:gem"


def reply(request: GeminiRequest) -> str | FunctionCall:
    if not request.is_conversation:
        return f"FAKE-GEMINI-REPLY-{request.seq}"
    last = (request.body.get("contents") or [{}])[-1]
    if any("functionResponse" in part for part in last.get("parts") or []):
        return f"DONE-AFTER-TOOL-{request.seq}"
    prompt = request.prompt or ""
    if "RUN-SHELL" in prompt:
        return FunctionCall("run_shell_command", {"command": "echo ran > ran.txt"})
    if "WRITE-FILE" in prompt:
        return FunctionCall("write_file", {"file_path": "written.txt", "content": "hello"})
    return f"FAKE-GEMINI-REPLY-{request.seq}"


@pytest.fixture
def gemini(work: Work) -> Iterator[tuple[Daemon, FakeGemini]]:
    with (
        FakeGemini(reply=reply) as api,
        gemini_daemon(work, api, attention={"quietSeconds": 1}) as d,
    ):
        yield d, api


def test_a_gemini_confirmation_holds_messages_and_is_answered_through_the_loop(
    gemini: tuple[Daemon, FakeGemini],
) -> None:
    daemon, api = gemini
    work = daemon.work
    started = work.cli("sessions", "start", REF, "--prompt", "say hello")
    assert started.exit_code == 0, started.stderr
    # its answer, not the input box and footer it draws under it
    answered = wait_until(
        lambda: (
            (a := work.attention(REF)).get("state") == "waiting"
            and a.get("lastMessage", "").startswith("FAKE-GEMINI-REPLY-")
            and a
        ),
        90,
        what="the first answer read",
    )
    assert "\n" not in answered["lastMessage"] and "Type your message" not in str(answered)
    # its conversation, read from the chat log it keeps in its own (confined) home
    sid = work.session_json(REF)["id"]
    turns = wait_until(
        lambda: daemon.api("GET", f"/sessions/{sid}/conversation").json()["turns"],
        30,
        what="the conversation",
    )
    assert "say hello" in turns[0]["prompt"], turns
    assert turns[0]["steps"][0]["text"] == answered["lastMessage"], turns
    cwd = Path(work.session_json(REF)["cwd"])

    assert work.cli("sessions", "say", REF, "-t", "please RUN-SHELL").exit_code == 0
    asked = work.wait_attention(REF, "needs-permission")["prompt"]
    # what a person decides on: the command, read from the dialog's box above the question
    assert (asked["text"], asked["tool"], asked["input"]) == (
        "Allow execution of [Shell]?",
        "Shell",
        "echo ran > ran.txt",
    )
    assert asked["detail"] == "Allow execution of [Shell]?\necho ran > ran.txt"
    listed = work.cli("attention")
    assert "Allow execution of [Shell]? echo ran > ran.txt" in listed.stdout, listed.stdout
    # the session page shows the command beside Allow, not folded away under "Whole input"
    client, _ = logged_in(daemon, daemon.token)
    try:
        page = client.get(f"/sessions/{sid}").text
    finally:
        client.close()
    assert '<code class="ask-command">echo ran &gt; ran.txt</code>' in page, page
    said = work.cli("sessions", "say", REF, "-t", "HELD-WHILE-ASKING")
    assert said.exit_code == 0 and "held" in said.stdout, said.stdout
    assert not (cwd / "ran.txt").exists(), "the message answered the dialog"

    allowed = work.cli("sessions", "allow", REF, "--prompt", asked["id"])
    assert allowed.exit_code == 0, allowed.stderr
    wait_until(lambda: (cwd / "ran.txt").exists(), 30, what="the command run once allowed")
    wait_until(
        lambda: any("HELD-WHILE-ASKING" in p for p in api.user_prompts()),
        60,
        what="the held message delivered after the answer",
    )

    work.wait_attention(REF, "waiting")
    assert work.cli("sessions", "say", REF, "-t", "now WRITE-FILE").exit_code == 0
    second = work.wait_attention(REF, "needs-permission")["prompt"]
    assert second["text"] == "Apply this change?" and second["id"] != asked["id"]
    assert (second["tool"], second["input"]) == ("WriteFile", "Writing to written.txt")
    denied = work.cli("sessions", "deny", REF, "--prompt", second["id"])
    assert denied.exit_code == 0, denied.stderr
    work.wait_attention(REF, "waiting")
    assert not (cwd / "written.txt").exists()
    # each answer is recorded as given, though the screen saw its dialog go the moment the
    # keys took (it used to close it first as moved-on, and the answer was called stale)
    history = json.loads(work.cli("attention", "history", REF, "--format", "json").stdout)
    outcomes = {p["id"]: (p["decision"], p["outcome"]) for p in history}
    assert outcomes[asked["id"]] == ("allow", "answered")
    assert outcomes[second["id"]] == ("deny", "answered")


@pytest.mark.bwrap
def test_a_confined_gemini_s_conversation_is_read_from_its_own_home(
    work: Work, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a person runs it: the key, the gateway and Gemini's sign-in are the operator's (their
    shell and their ``~/.gemini``), the harness's config names none of them, and the agent runs
    confined with a home of its own, where Gemini keeps its chat log (0.61: a ``.jsonl``). The
    Conversation tab reads it from there (it said "no transcript of this gemini agent yet")."""
    with FakeGemini(reply=reply) as api:
        operator = api.gemini_env(work.env.root / "operator-home")
        for name, value in operator.items():  # the operator's shell, which starts the agent
            monkeypatch.setenv(name, value)
        work.configure(
            harnesses={"gemini": {"binary": str(GEMINI_BIN)}},
            routing={"defaultHarness": "gemini"},
            sandbox={"mode": "bwrap"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work, **operator) as daemon:
            started = work.cli("sessions", "start", REF, "--prompt", "say hello")
            assert started.exit_code == 0, started.stderr
            sid = work.session_json(REF)["id"]
            turns = wait_until(
                lambda: (
                    (t := daemon.api("GET", f"/sessions/{sid}/conversation").json()["turns"])
                    and t[0]["steps"]
                    and t
                ),
                90,
                what="the conversation's first answer",
            )
            assert "say hello" in turns[0]["prompt"], turns
            assert turns[0]["steps"][0]["text"].startswith("FAKE-GEMINI-REPLY-"), turns
    kept = list((work.env.state_dir / "homes").glob("*/.gemini/tmp/*/chats/session-*.jsonl"))
    assert len(kept) == 1, kept  # in the agent's own home, not the operator's
    assert not list((work.env.root / "operator-home").glob(".gemini/tmp/*/chats/*"))


def test_a_typed_answer_to_a_question_read_from_its_screen_is_never_a_shell_command(
    work: Work,
) -> None:
    """A question read from Gemini's screen (``questionPatterns`` the operator configured) is
    answered in its input box: the typed answer goes in as a paste, so its ``!`` does not
    switch Gemini to shell mode (typed as keys, the Enter ran the rest of the answer)."""

    def asks(request: GeminiRequest) -> str:
        if request.is_conversation and "ANSWERED" not in (request.prompt or ""):
            return "Shall I go on? (FAKE-QUESTION)"
        return f"FAKE-GEMINI-REPLY-{request.seq}"

    question = {"gemini": {"questionPatterns": [r"(?P<text>Shall I go on\? \(FAKE-QUESTION\))"]}}
    with FakeGemini(reply=asks) as api, gemini_daemon(work, api, attention={"harnesses": question}):
        assert work.cli("sessions", "start", REF, "--prompt", "start").exit_code == 0
        asked = work.wait_attention(REF, "needs-input", 90)["prompt"]
        assert asked["text"] == "Shall I go on? (FAKE-QUESTION)", asked
        cwd = Path(work.session_json(REF)["cwd"])
        answered = work.cli(
            "sessions", "answer", REF, "--prompt", asked["id"],
            "--text", "yes ANSWERED! touch PWNED",
        )  # fmt: skip
        assert answered.exit_code == 0, answered.stdout + answered.stderr
        got = wait_until(
            lambda: [p for p in api.user_prompts() if "ANSWERED" in p], 60, what="the answer"
        )
        assert got[0] == "yes ANSWERED! touch PWNED", got
        work.wait_attention(REF, "waiting", 60)
        assert not list(cwd.glob("PWNED*")), "the answer ran as a shell command"
