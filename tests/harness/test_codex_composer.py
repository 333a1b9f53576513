"""Codex's composer as its adapter reads it (decision 0107), from screens the pinned CLI drew
in tmux (their colours as it draws them): ready and read at any width, with or without the
``? for shortcuts`` hint its footer leaves out while the box holds text or in a narrow window;
a person's draft, shell mode and a folded paste; never a dialog's list of choices."""

from __future__ import annotations

import re

from tests.attention.test_codex_permission import FOOTER, _read
from the_loop.harness import InputBox, build_adapter
from the_loop.runner.tmux_screens import without_colours
from the_loop.store import attention as store

CODEX = build_adapter("codex")
OFF = "\x1b[0m\x1b[39m\x1b[49m"
MARK = f"\x1b[1m\u203a{OFF} "
SHELL = "\x1b[1m\x1b[38;5;9m!"
WIDE = [
    "  \x1b[38;5;223mfake-codex-model default\x1b[39m \u00b7 \x1b[38;5;151m/root/ws",
    f"\x1b[39m  \x1b[1m\u2190{OFF} for agents \u00b7 \x1b[1m?{OFF} for shortcuts",
]
NARROW = [  # 48 columns, once Codex has a warning to show
    "  fake-codex-model default \u00b7 /root/tmpkleixdc8/\u2026",
    "  \u2190 for agents         \u26a0 1 warning \u00b7 f2 to view",
]
HISTORY = [
    "  >_ OpenAI Codex (v0.171.0)",
    "",
    f"{MARK}Message from alice:",
    "",
    "  first paragraph",
    "",
    "  and the last one",
    "",
    "\x1b[1m\x1b[38;5;2m\u2022{OFF} FAKE-CODEX-REPLY-1",
    "",
    "\x1b[2m  Worked for <1s \u2022 12:16",
    OFF,
]
SENT = "Message from alice:\nfirst paragraph\nand the last one"


def drawn(*box: str, footer: list[str] = WIDE) -> str:
    """A screen with BOX as the composer's lines, under the conversation, over FOOTER."""
    return "\n".join([*HISTORY, "", *box, OFF, *footer, "", ""])


def ready(styled: str) -> bool:
    return re.search(CODEX.ready_pattern or "", without_colours(styled)) is not None


def box(styled: str) -> InputBox | None:
    return CODEX.input_box(without_colours(styled))


def test_the_composer_is_ready_and_read_at_any_width() -> None:
    for footer in (WIDE, NARROW, ["  ? for shortcuts"]):
        empty = drawn(f"{MARK}\x1b[2mAsk Codex to do anything", footer=footer)
        assert ready(empty), footer
        assert box(empty) == InputBox("", SENT)
        assert CODEX.draft(empty) is None
    working = ["\u2022 Working (0s \u2022 esc to interrupt)", "", f"{MARK}Ask a follow-up question"]
    assert ready(drawn(*working, footer=NARROW))
    assert box(drawn(*working, footer=NARROW)) == InputBox("", SENT)


def test_a_draft_shell_mode_and_a_paste_are_what_the_composer_holds() -> None:
    for lines, held, shell in (
        ([f"{MARK}my draft words"], "my draft words", False),
        ([f"{MARK}my draft words", "  second line"], "my draft words\nsecond line", False),
        (
            [f"{MARK}1. a numbered list", "  2. of my own"],
            "1. a numbered list\n2. of my own",
            False,
        ),
        ([SHELL], "", True),  # a "!" typed into the empty box: what is sent runs in a shell
        ([f"{SHELL}{OFF} ls -la"], "ls -la", True),
    ):
        for footer in (WIDE, NARROW, ["  tab to queue message"]):
            screen = drawn(*lines, footer=footer)
            assert ready(screen), lines  # the draft holds the message; it is not "not ready"
            found = CODEX.draft(screen)
            assert found is not None and (found.held, found.shell) == (held, shell), lines
    folded = box(drawn(f"{MARK}\x1b[38;5;6m[Pasted Content 2000 chars]"))
    assert folded is not None and folded.folded


def test_a_dialogs_choices_are_no_composer() -> None:
    """Every dialog that lists choices under the composer's mark ends with ``Press enter``:
    the-loop never takes it for the composer, so never pastes into it, however it wraps."""
    approval = [
        "  Would you like to run the following command?",
        "",
        "  $ touch x",
        "",
        "\u203a 1. Yes, proceed (y)",
        "  2. Yes, and don't ask again for this command (p)",
        "  3. No, and tell Codex what to do differently (esc)",
        "",
        "  Press enter to confirm or esc to cancel",
    ]
    narrow = [*approval[:-1], "  Press enter to confirm or esc to", "  cancel"]
    trust = ["\u203a 1. Yes, continue", "  2. No, quit", "", "  Press enter to continue"]
    booting = ["  >_ OpenAI Codex (v0.171.0)", "     loading", ""]
    for screen in (approval, narrow, trust, booting):
        text = "\n".join(screen)
        assert not ready(text) and box(text) is None, screen


def test_an_interruption_over_the_composer_is_a_wait_at_any_width() -> None:
    """``waitingPatterns[0]`` reads the interruption a denial leaves right over the composer,
    also when it wraps in a narrow window and the footer has no hint."""
    line = "\u25a0 Conversation interrupted - use /feedback if something went wrong"
    wrapped = ["\u25a0 Conversation interrupted - tell the model", "  what to do differently."]
    for interrupted, footer in (([line], FOOTER), (wrapped, [FOOTER[0], "", *NARROW])):
        verdict = _read("\n".join([*interrupted, "", *footer]))
        assert verdict.state == store.WAITING, interrupted
        assert verdict.rule.startswith("waitingPatterns[0]")
