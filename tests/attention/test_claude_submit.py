"""Each message reaches a just-started Claude Code on its own (decision 0100), with the real
Claude Code (pinned) against the fake Messages API, in real tmux, through the daemon.

Messages pasted in the first moments after Claude Code drew its input box (a fresh start, a
resume with messages waiting) went out as one: the second landed in the box behind the first
and its Enter sent both, glued (``…first messageMessage from root …``). A delivery to Claude
Code now waits until its ``UserPromptSubmit`` hook reports the message taken before the next
paste, and presses Enter again when text stays in the box without that report. Its input box as
the adapter reads it, from screens the pinned CLI drew."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes import lost_enter, pty_relay
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, unwrap_pasted
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent import submit
from the_loop.harness import InputBox, build_adapter
from the_loop.store import attention as store
from the_loop.store import prompts as queue
from the_loop.store.db import open_database

RULE = "\u2500" * 100
IDLE = "  \u23f8 manual mode on \u00b7 ? for shortcuts"
AT_WORK = "  \u23f8 manual mode on \u00b7 esc to interrupt \u00b7 \u2190 for agents"
BANNER = " \u2590\u259b\u2588\u2588\u2588\u259c\u258c   Claude Code v2.1.332\n\n"
GLUED = re.compile(r"\SMessage from ")
"""A message that begins right after the text of another, with nothing between: glued."""


def screen(box: str, footer: str = IDLE) -> str:
    return f"{BANNER}\u25cf FAKE-REPLY-1\n\n{RULE}\n{box}\n{RULE}\n{footer}\n\n\n"


def test_the_input_box_read_from_claude_screens() -> None:
    claude = build_adapter("claude")

    def read(shown: str) -> InputBox | None:
        box = claude.input_box(shown)
        return None if box is None else dataclasses.replace(box, rows=range(0))

    assert read(screen("\u276f\u00a0")) == InputBox("", "")
    assert read(screen("\u276f ", AT_WORK)) == InputBox("", "", busy=True)
    two = "\u276f Message from root (operator) about local:g5:\n  bravo second message"
    assert read(screen(two)) == InputBox(
        "Message from root (operator) about local:g5:\nbravo second message", ""
    )
    assert (box := claude.input_box(screen(two))) is not None and box.rows == range(5, 7)
    folded = read(screen("\u276f [Pasted text #1 +8 lines]", "  paste again to expand"))
    assert folded == InputBox("[Pasted text #1 +8 lines]", "", folded=True)
    queued = read(screen("\u276f Press up to edit queued messages", AT_WORK))
    assert queued == InputBox("", "", busy=True)  # a hint: an Enter there sends them now
    example = read(screen('\u276f Try "how does <filepath> work?"'))
    assert example == InputBox("", "")
    dialog = (
        f"\u25cf Bash(touch ran.txt)\n{RULE}\n Bash command\n   touch ran.txt\n"
        " Do you want to proceed?\n \u276f 1. Yes\n   2. No\n Esc to cancel \u00b7 Tab to amend\n"
    )
    assert claude.input_box(dialog) is None  # no box: nothing is pressed on a dialog
    assert claude.input_box(f"{screen(chr(0x276F))}\n  more\n  and more") is None


ESC = "\x1b"
STYLED_RULE = f"{ESC}[37m{RULE}{ESC}[39m"


def styled(box: str, footer: str = IDLE) -> str:
    """A screen as ``capture-pane -e`` gives it, BOX's row as the pinned CLI drew it."""
    return f"{BANNER}\u25cf FAKE-REPLY-1\n\n{STYLED_RULE}\n{box}\n{STYLED_RULE}\n{footer}"


def test_a_draft_is_told_from_the_hints_by_how_it_is_drawn() -> None:
    """Text a person typed or pasted is drawn in the terminal's default colour; the hints in an
    empty box are drawn dim (the cursor, reversed, sits on their first letter). Rows as the
    pinned CLI drew them, captured with ``-e``."""
    claude = build_adapter("claude")
    cursor = f"{ESC}[7m {ESC}[0m{ESC}[39m{ESC}[49m"
    assert claude.draft(styled(f"{ESC}[39m\u276f\u00a0my own draft{cursor}"))
    pasted = f"{ESC}[39m\u276f\u00a0[Pasted text #2 +9 lines]{ESC}[7m "
    assert claude.draft(styled(pasted, f"  {ESC}[2m{ESC}[37mpaste again to expand{ESC}[0m"))
    assert not claude.draft(styled(f"{ESC}[39m\u276f\u00a0{cursor}"))  # empty
    queued = (
        f"{ESC}[2m\u276f\u00a0{ESC}[0;7m{ESC}[39m{ESC}[49mP{ESC}[0;2m{ESC}[39m{ESC}[49m"
        "ress up to edit queued messages"
    )
    assert not claude.draft(styled(queued, AT_WORK))
    # any text drawn dim or in a colour of its own is not a person's, whatever it says
    dim = f"{ESC}[39m\u276f\u00a0{ESC}[7mf{ESC}[0;2mix the failing test{ESC}[0m"
    assert not claude.draft(styled(dim))
    coloured = f"{ESC}[39m\u276f {ESC}[38;5;246mfix the failing test{ESC}[39m "
    assert not claude.draft(styled(coloured))
    assert claude.draft(styled(f"{ESC}[38;2;1;2;3m{ESC}[39m\u276f x{ESC}[48;5;4my"))
    assert not claude.draft(f"{ESC}[39mmy own draft")  # no box drawn
    assert not build_adapter("codex").draft(styled(f"{ESC}[39m\u276f\u00a0my own draft"))
    # the message the-loop delivered last, put back in the box by an interrupted turn
    last = "Message from root (operator) about local:dr1:\n\nvictor SLOW turn to interrupt\n"
    put_back = "Message from root (operator) about local:dr1:\n\nvictor SLOW turn to interrupt"
    assert submit.shows(put_back, last)
    assert not submit.shows("my own draft", last)
    assert not submit.shows("my own draft", "")


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_wait_behind_a_draft_is_noted_once(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A wait looked at again every second is reported once per queued prompt, by whichever
    process or node looks first, and told once on its item after it lasted."""
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db = open_database(tmp_path, url)
    with db.transaction() as tx:
        seq = queue.add(tx, "s-draft", "a message", None)
    assert seq is not None
    with db.transaction() as tx:
        assert queue.note_held(tx, seq, "behind a draft")
    # its notice, due once the wait has lasted, is told once (decision 0104)
    now = time.time()
    assert queue.waits_due(db.connect(), "behind a draft", now - 60) == []  # not lasted yet
    assert queue.waits_due(db.connect(), "behind a draft", now) == [(seq, "s-draft")]
    with db.transaction() as tx:
        assert queue.mark_told(tx, seq, now)
        assert not queue.mark_told(tx, seq, now)
    assert queue.waits_due(db.connect(), "behind a draft", now) == []
    with db.transaction() as tx:
        assert not queue.note_held(tx, seq, "behind a draft")
        assert queue.note_held(tx, seq, "behind a dialog")
    assert queue.waits_due(db.connect(), "behind a draft", now) == []
    assert queue.waits_due(db.connect(), "behind a dialog", time.time()) == [(seq, "s-draft")]
    db.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_prompt_taken_is_known_from_its_report_or_a_prompt_opened_since(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """What a delivery's watch asks the store: a submit reported at or after the paste (a
    hook's start is known to its clock tick), or a prompt for a person opened since."""
    url = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db = open_database(tmp_path, url)
    agent = "s-submit"
    with db.transaction() as tx:
        store.register(tx, agent, work_item="local:x", standing=None, harness="claude",
                       requester="alice", now=1.0)  # fmt: skip
    assert not store.took_input_since(db.connect(), agent, 10.0)
    with db.transaction() as tx:
        store.submitted(tx, agent, 10.0)
        store.submitted(tx, agent, 9.0)  # a late report of an earlier prompt moves nothing back
    assert store.took_input_since(db.connect(), agent, 10.01)  # within a tick
    assert not store.took_input_since(db.connect(), agent, 10.5)
    with db.transaction() as tx:
        asks = store.NewPrompt("permission", tool="Bash")
        store.set_state(tx, agent, store.NEEDS_PERMISSION, "hook", "asks", now=11.0, prompt=asks)
    assert store.took_input_since(db.connect(), agent, 10.5)
    assert not store.took_input_since(db.connect(), agent, 11.5)
    assert not store.took_input_since(db.connect(), "s-other", 0.0)
    db.close()


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def serve(work: Work, api: FakeAnthropic, binary: str) -> Daemon:
    env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(work.env.root / "home")}
    work.configure(
        harnesses={"claude": {"binary": binary, "env": env}},
        routing={"defaultHarness": "claude"},
    )
    daemon = Daemon(work)
    daemon.start()
    return daemon


def texts(api: FakeAnthropic) -> list[str]:
    """Each text the model was sent as a person's, in the newest conversation request (it
    carries the whole conversation): one per message, pasted or queued."""
    last = api.last_conversation_request()
    found: list[str] = []
    for message in last.messages if last else []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if message.get("role") != "user" or not isinstance(blocks, list):
            continue
        for block in blocks:
            text = block.get("text") if isinstance(block, dict) else None
            if isinstance(text, str) and not text.lstrip().startswith("<system-reminder>"):
                found.append(unwrap_pasted(text))
    return found


def reached(api: FakeAnthropic, marks: list[str]) -> list[str] | None:
    """The texts sent, once each of MARKS is in one of them."""
    sent = texts(api)
    return sent if all(any(mark in text for text in sent) for mark in marks) else None


def at_once(daemon: Daemon, ref: str, prompts: list[str]) -> None:
    """Send PROMPTS to REF at the same moment, as people and webhooks do."""
    answers: list[Any] = []

    def post(prompt: str) -> None:
        answers.append(daemon.api("POST", "/sessions", json={"ref": ref, "prompt": prompt}))

    threads = [threading.Thread(target=post, args=(prompt,)) for prompt in prompts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(answer.status_code in (200, 201, 202) for answer in answers), answers


def first_turn(work: Work, daemon: Daemon, api: FakeAnthropic, ref: str, prompt: str) -> None:
    """Start REF's agent with PROMPT, and see the model get it and the agent wait again."""
    started = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": prompt})
    assert started.status_code in (200, 201, 202), started.text
    mark = prompt.split()[0]
    wait_until(lambda: reached(api, [mark]), 120, what="the first message at the model")
    work.wait_attention(ref, "waiting", 60, "claude-hook:Stop")


def apart(sent: list[str], marks: list[str]) -> None:
    """Each of MARKS reached the model once, in a message of its own, none glued to another."""
    assert [sum(mark in text for text in sent) for mark in marks] == [1] * len(marks), sent
    assert not [text for text in sent if sum(mark in text for mark in marks) > 1], sent
    assert not [text for text in sent if GLUED.search(text)], sent


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_messages_at_a_claude_code_just_started_or_resumed_reach_it_one_by_one(
    work: Work, api: FakeAnthropic
) -> None:
    """Three messages at once to a new agent, then three at once after its agent was lost:
    each reaches the model once, on its own. Before, the first two (and the two after the
    resume) went out glued."""
    daemon = serve(work, api, str(CLAUDE_BIN))
    try:
        ref = "local:at-once"
        first = ["ALPHA-1 first", "BRAVO-1 second", "CHARLIE-1 third"]
        at_once(daemon, ref, first)
        marks = [prompt.split()[0] for prompt in first]
        apart(wait_until(lambda: reached(api, marks), 120, what="the three messages"), marks)

        work.wait_attention(ref, "waiting", 60, "claude-hook:Stop")
        target = work.session_json(ref)["tmuxTarget"]
        work.tmux("kill-session", "-t", f"={target}")
        wait_until(
            lambda: work.attention(ref).get("state") in ("exited", "blocked"), 30, what="lost"
        )
        again = ["DELTA-2 fourth", "ECHO-2 fifth", "FOXTROT-2 sixth"]
        at_once(daemon, ref, again)
        marks += [prompt.split()[0] for prompt in again]
        apart(wait_until(lambda: reached(api, marks), 120, what="the messages after it"), marks)
    finally:
        daemon.stop()


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_message_whose_enter_claude_code_lost_is_sent_again(
    work: Work, api: FakeAnthropic
) -> None:
    """Claude Code behind a relay that drops the Enter after every paste
    (``tests/fakes/lost_enter.py``): the first message of a new agent and a later one each
    reach the model once, on their own, by an Enter pressed again; ``session.unsent`` says so.
    Without it, the first stays in the input box for good."""
    wrapper = pty_relay.wrapper(
        work.env.root / "claude-lost-enter", lost_enter.__file__, CLAUDE_BIN
    )
    daemon = serve(work, api, str(wrapper))
    try:
        ref = "local:lost-enter"
        first_turn(work, daemon, api, ref, "LOST-1 first")
        said = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": "LOST-2 second"})
        assert said.status_code in (200, 201, 202), said.text
        apart(
            wait_until(lambda: reached(api, ["LOST-1", "LOST-2"]), 60, what="LOST-2"),
            ["LOST-1", "LOST-2"],
        )
        unsent = wait_until(
            lambda: _unsent(daemon, 2), 30, what="both pastes reported pressed again"
        )
        # one each; a loaded host may draw the sent box late and get a second, harmless Enter
        assert len(unsent) == 2, unsent
        assert all(e["payload"]["left"] and e["payload"]["enters"] >= 1 for e in unsent), unsent
    finally:
        daemon.stop()


def _unsent(daemon: Daemon, count: int) -> list[dict[str, Any]] | None:
    events = daemon.api("GET", "/events", params={"type": "session.unsent"}).json()
    return events if len(events) >= count else None


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_message_waits_behind_a_persons_draft_and_neither_is_glued(
    work: Work, api: FakeAnthropic
) -> None:
    """A person typing in the agent's terminal has text in its input box, unsent: a message
    that comes then waits (reported once, looked at again every second) until the person
    clears that text or sends it, and then reaches the model on its own. Before, it was pasted
    behind the draft and its Enter sent both as one (``my own draftMessage from root …``)."""
    daemon = serve(work, api, str(CLAUDE_BIN))
    try:
        ref = "local:draft"
        first_turn(work, daemon, api, ref, "KILO-1 first")
        target = work.session_json(ref)["tmuxTarget"]

        type_draft(work, target, "LIMA typed by a person")
        since, looked = time.monotonic(), captures(daemon)
        say_held(daemon, ref, "MIKE-2 second")
        wait_until(lambda: time.monotonic() - since >= 4, 10, what="several looks again")
        assert captures(daemon) - looked >= 3  # its box looked at again (nothing reports it)
        assert len(_held(daemon)) == 1, _held(daemon)
        assert reached(api, ["MIKE-2"]) is None  # still waiting
        work.tmux("send-keys", "-t", f"={target}:", "C-u")  # the person clears it
        sent = wait_until(lambda: reached(api, ["MIKE-2"]), 30, what="the message, once cleared")
        apart(sent, ["KILO-1", "MIKE-2"])
        assert not [text for text in sent if "LIMA" in text], sent
        work.wait_attention(ref, "waiting", 60, "claude-hook:Stop")

        type_draft(work, target, "NOVEMBER typed by a person")
        say_held(daemon, ref, "OSCAR-3 third")
        work.tmux("send-keys", "-t", f"={target}:", "Enter")  # the person sends it
        marks = ["KILO-1", "MIKE-2", "NOVEMBER", "OSCAR-3"]
        apart(wait_until(lambda: reached(api, marks), 60, what="the draft and the message"), marks)
        assert len(_held(daemon)) == 2, _held(daemon)
    finally:
        daemon.stop()


def say_held(daemon: Daemon, ref: str, prompt: str) -> None:
    """Send PROMPT to REF's agent through the API, and see it told held behind a draft."""
    held = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": prompt})
    assert held.status_code in (200, 201, 202), held.text
    assert "held behind unsent text in the agent's input box" in held.text, held.text
    assert "delivered once that text is sent or cleared" in held.text, held.text


def type_draft(work: Work, target: str, text: str) -> None:
    """Type TEXT into TARGET's input box as a person would, and see it drawn there."""
    work.tmux("send-keys", "-t", f"={target}:", "-l", text)
    wait_until(
        lambda: text in work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout,
        15,
        what="the draft in the box",
    )


def captures(daemon: Daemon) -> int:
    return int(daemon.metric("the_loop_tmux_pane_captures_total") or 0)


def _held(daemon: Daemon) -> list[dict[str, Any]]:
    events = daemon.api("GET", "/events", params={"type": "session.held"}).json()
    return [e for e in events if "unsent text" in e["payload"]["reason"]]


def long_reply(request: RecordedRequest) -> str:
    """An answer that fills the screen: the input box and its footer end on its last row."""
    return "\n".join(f"FAKE-LONG-{request.seq} line {n}" for n in range(70))


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_draft_on_an_exited_agents_last_screen_holds_nothing(work: Work) -> None:
    """An agent killed with a draft in its box: the draft went with it, and the next message
    starts it again and reaches the model. The pinned CLI's dead pane shows nothing (the
    reset at its death leaves the alternate screen it drew on), so this holds even without
    ``live_capture``; ``tests/runner/test_tmux_screens.py`` shows that guard on a program that
    draws its box in place."""
    with FakeAnthropic(reply=long_reply) as api:
        daemon = serve(work, api, str(CLAUDE_BIN))
        try:
            ref = "local:draft-exited"
            first_turn(work, daemon, api, ref, "PAPA-1 first")
            target = work.session_json(ref)["tmuxTarget"]
            type_draft(work, target, "QUEBEC typed by a person")
            os.kill(work.pane_pid(target), signal.SIGKILL)
            wait_until(lambda: work.pane_dead(target) == "1", 30, what="the agent exited")
            said = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": "ROMEO-2 next"})
            assert said.status_code in (200, 201, 202), said.text
            assert "held" not in said.text, said.text
            wait_until(lambda: reached(api, ["ROMEO-2"]), 120, what="the next message")
        finally:
            daemon.stop()
