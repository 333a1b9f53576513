"""A message left unsent in Gemini's input box is submitted again (decision 0094): the real
Gemini CLI (pinned) in real tmux against the fake Gemini API. Its Enter is lost on purpose, the
way a loaded host loses it: pasted at once after the message (no submit gap), Gemini takes it
for a new line (its paste protection). Gemini's input box as its adapter reads it, from screens
the pinned CLI drew."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon import served
from tests.fakes import held_up, pty_relay
from tests.fakes.fake_gemini import FakeGemini
from tests.harness.agent_clis import start_interactive
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent import submit
from the_loop.config import HarnessConfig
from the_loop.harness import HarnessAdapter, InputBox, LaunchSpec, build_adapter
from the_loop.runner.tmux import TmuxRunner
from the_loop.runner.tmux_screens import without_colours

TARGET = "loop-gemini-unsent"
REF = "local:held-up"
needs_gemini = pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}")
RULE = "\u2500" * 60
FOOTER = " workspace (/directory)      sandbox      /model\n /tmp/ws      no sandbox      Auto"
IDLE = (
    " > earlier message\n\n\u2726 FAKE-GEMINI-REPLY-2\n\n      ? for shortcuts\n"
    f"{RULE}\n Shift+Tab to accept edits\n\n >   Type your message or @path/to/file\n\n{FOOTER}"
)


@pytest.fixture
def gemini(runner: TmuxRunner, tmp_path: Path) -> Iterator[tuple[FakeGemini, HarnessAdapter]]:
    """Gemini, started as the-loop starts it and ready for input."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    with FakeGemini() as api:
        env = api.gemini_env(tmp_path / "gemini-home")
        adapter = build_adapter("gemini", HarnessConfig(binary=str(GEMINI_BIN), env=env))
        spec = LaunchSpec(workspace, str(uuid.uuid4()))
        start_interactive(runner, TARGET, adapter, spec, resume=False)
        yield api, adapter


def box_of(runner: TmuxRunner, adapter: HarnessAdapter) -> InputBox | None:
    return adapter.input_box(runner.capture(TARGET, 60).unwrap().text)


def lose_the_enter(runner: TmuxRunner, adapter: HarnessAdapter, text: str) -> None:
    """Paste TEXT with its Enter at once, which Gemini takes as a new line: the message stays
    in the input box (waited for, so the loss is proved, not assumed)."""
    runner.deliver(TARGET, text, 0.0, adapter.frames_paste).unwrap()
    head = text.split()[0]
    wait_until(
        lambda: (box := box_of(runner, adapter)) is not None and (head in box.held or box.folded),
        30,
        what="the message left in the input box",
    )


@pytest.mark.slow
@pytest.mark.timeout(240)
@needs_gemini
@pytest.mark.parametrize(
    "text",
    [
        "unsent one-liner: say HELLO",
        "\n".join(f"unsent line {n} of a long paste" for n in range(9)),
    ],
    ids=["one-line", "folded"],
)
def test_a_message_whose_enter_was_lost_is_submitted(
    runner: TmuxRunner, gemini: tuple[FakeGemini, HarnessAdapter], text: str
) -> None:
    api, adapter = gemini
    lose_the_enter(runner, adapter, text)
    assert api.conversation_turns() == [], "the Enter was lost: nothing reached the model"

    assert submit.see_submitted(runner, TARGET, adapter, text).left
    turns = wait_until(api.conversation_turns, 30, what="the message at the model")
    assert turns[0].user_texts()[-1].strip() == text
    assert (box := box_of(runner, adapter)) is not None and box.held == ""


@pytest.mark.slow
@pytest.mark.timeout(240)
@needs_gemini
def test_a_persons_draft_in_the_box_is_left_alone(
    runner: TmuxRunner, gemini: tuple[FakeGemini, HarnessAdapter]
) -> None:
    """Text in the box that is not the message (a person typing in the terminal) gets no
    Enter: the watch ends at once and the draft stays unsent."""
    api, adapter = gemini
    runner.run("send-keys", "-t", f"={TARGET}:", "-l", "my own draft")
    wait_until(
        lambda: (box := box_of(runner, adapter)) is not None and box.held == "my own draft",
        30,
        what="the draft in the box",
    )
    assert submit.see_submitted(runner, TARGET, adapter, "a message from the-loop").left
    assert (box := box_of(runner, adapter)) is not None and box.held == "my own draft"
    assert api.conversation_turns() == []


def test_the_input_box_read_from_gemini_screens() -> None:
    gemini = build_adapter("gemini")
    assert gemini.input_box(IDLE) == InputBox("", "earlier message")
    unsent = IDLE.replace(">   Type your message or @path/to/file", "> line one\n   line two")
    assert gemini.input_box(unsent) == InputBox("line one\nline two", "earlier message")
    folded = IDLE.replace(">   Type your message or @path/to/file", "> [Pasted Text: 9 lines]")
    assert gemini.input_box(folded) == InputBox("[Pasted Text: 9 lines]", "earlier message", True)
    fresh = IDLE.replace(" > earlier message\n\n\u2726 FAKE-GEMINI-REPLY-2\n", "Tips\n")
    assert gemini.input_box(fresh) == InputBox("", "")
    resuming = "Resuming session...\n > earlier message\n\n\u2726 FAKE-GEMINI-REPLY-2\n"
    assert gemini.input_box(resuming) is None  # no rule, no box: not read
    assert build_adapter("claude").input_box(IDLE) is None  # a harness that reads no box


def test_a_message_in_paragraphs_is_read_whole_in_the_box_and_above_it() -> None:
    """Gemini draws a blank line between a message's paragraphs, in its box and in the
    conversation. The watch after a paste that misses the message in the box (Gemini took it
    before the first look) knows it sent by the last message above the box: read whole, not
    only its first paragraph, which held every message the-loop sends (``Message from …:`` and
    a blank line first) for the watch's 10 s and reported it unsent."""
    gemini = build_adapter("gemini")
    message = "Message from root (operator) about local:x:\n\nQUEBEC-2 second\n\nthird para"
    drawn = message.replace("\n\n", "\n\n   ")
    pasted = IDLE.replace(">   Type your message or @path/to/file", f"> {drawn}")
    assert gemini.input_box(pasted) == InputBox(message.replace("\n\n", "\n"), "earlier message")
    sent = IDLE.replace(" > earlier message", f" > {drawn}")
    assert gemini.input_box(sent) == InputBox("", message.replace("\n\n", "\n"))


GREY, WHITE, ACCENT, OFF = "\x1b[38;5;248m", "\x1b[38;5;231m", "\x1b[38;5;141m", "\x1b[39m"
"""The colours the pinned CLI's default theme draws its box in, in tmux: the placeholder and a
completion grey, typed text white, a command or a file accented."""


def test_a_draft_in_geminis_box_is_told_by_its_words_not_their_colours() -> None:
    """Gemini draws a placeholder (one per mode) only in an empty box: any other text there is
    a person's draft (decision 0105), whatever colour its theme draws it in; so is a box a
    person switched to shell mode."""
    gemini = build_adapter("gemini")
    line = ">   Type your message or @path/to/file"

    def drawn(box: str) -> str:
        return IDLE.replace(line, box)

    for empty in (
        f"> \x1b[7m \x1b[27m{GREY} Type your message or @path/to/file{OFF}",
        f"> \x1b[7m \x1b[27m{GREY} Press 'i' for INSERT mode.{OFF}",
    ):
        assert gemini.draft(drawn(empty)) is None, empty
        assert gemini.input_box(without_colours(drawn(empty))) == InputBox("", "earlier message")
    for typed, held, shell in (
        (f"> {WHITE}my own draft{OFF}\x1b[7m \x1b[27m", "my own draft", False),
        (f"> {ACCENT}/he{OFF}\x1b[7m \x1b[27m{GREY}lp{OFF}", "/he lp", False),  # a completion
        (
            f"> {GREY}a theme that draws typed text grey{OFF}",
            "a theme that draws typed text grey",
            False,
        ),
        (f"> {WHITE}line one{OFF}\n   {WHITE}line two{OFF}", "line one\nline two", False),
        # shell mode, switched to by a "!" typed into the box: a message would run as a command
        (f"! \x1b[7m \x1b[27m{GREY} Type your shell command{OFF}", "", True),
        (f"! {WHITE}ls -la{OFF}\x1b[7m \x1b[27m", "ls -la", True),
    ):
        box = gemini.draft(drawn(typed))
        assert box is not None and (box.held, box.shell) == (held, shell), typed
    assert gemini.draft("Resuming session...\n") is None  # no box drawn


@pytest.mark.slow
@pytest.mark.timeout(300)
@needs_gemini
def test_the_loop_submits_what_a_held_up_gemini_left_in_its_box(work: Work) -> None:
    """Through the daemon, the first message of a new agent and two later ones: Gemini behind a
    relay that hands it each paste together with the Enter that followed it a second later
    (``tests/fakes/held_up.py``), as a loaded host did. Each reaches the model once."""
    wrapper = pty_relay.wrapper(work.env.root / "gemini-held-up", held_up.__file__, GEMINI_BIN)
    with FakeGemini() as api:
        work.configure(
            harnesses={"gemini": {"binary": str(wrapper), "env": api.gemini_env(work.env.root)}},
            routing={"defaultHarness": "gemini"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work):
            assert work.cli("sessions", "start", REF, "--prompt", "first HELD-1").exit_code == 0
            wait_until(lambda: sent(api, "HELD-1"), 90, what="the first message at the model")
            for mark in ("HELD-2", "HELD-3"):  # from one person: they begin alike, end apart
                work.wait_attention(REF, "waiting", 60)
                said = work.cli("sessions", "say", REF, "-t", f"then {mark}")
                assert said.exit_code == 0, said.stderr
                wait_until(lambda m=mark: sent(api, m), 90, what=f"{mark} at the model")
            assert len([p for p in api.user_prompts() if "HELD-" in p]) == 3, "each one once"


def sent(api: FakeGemini, words: str) -> bool:
    return any(words in prompt for prompt in api.user_prompts())
