"""Gemini read from its screen. Its last message (``lastMessagePatterns``): Gemini draws its input
box, hints and footer under its answer, so the screen's last lines were that chrome ("Shift+Tab
to accept edits", "Type your message or @path/to/file", its workspace and sandbox), which the
Attention page showed as "the agent's last message" and a Slack thread got as the turn's
answer. Its built-in pattern reads the answer after its "✦ " mark, up to the rule over its
input box. Its turn's end (``waitingPatterns``): the hint line alone over that rule, where its
spinner is while it works — waiting at once, not 20 s later (``quietSeconds``). The screens
are laid out as the pinned Gemini CLI (0.61) draws them."""

from __future__ import annotations

from the_loop.agent.attention.screen import classify, last_message
from the_loop.config import Config
from the_loop.store import attention as store

CONFIG = Config.model_validate({}).attention
WIDTH = 200
CHROME = [
    "",
    "",
    "? for shortcuts".rjust(WIDTH - 5),
    "─" * WIDTH,
    " Shift+Tab to accept edits",
    "",
    " >   Type your message or @path/to/file",
    "",
    " workspace (/directory)" + " " * 89 + "sandbox" + " " * 74 + "/model",
    " /tmp/state/scratch/local-gem" + " " * 83 + "no sandbox" + " " * 73 + "Auto",
]


def _screen(*answer: str) -> str:
    return "\n".join(
        [
            " > Message from root (operator) about local:gem:",
            "",
            "   say hello",
            "",
            "✦ FAKE-GEMINI-REPLY-2",
            "",
            " > Message from root (operator) about local:gem:",
            "",
            "   now the list",
            "",
            *answer,
            *CHROME,
        ]
    )


def test_gemini_s_last_answer_is_read_without_its_input_box_and_footer() -> None:
    gemini = CONFIG.harness("gemini")
    assert last_message(_screen("✦ FAKE-GEMINI-REPLY-4"), gemini) == "FAKE-GEMINI-REPLY-4"
    many = _screen(
        "✦ First line of the answer.",
        "",
        "   - a point",
        "   - another point",
        "",
        "  Last line.",
    )
    assert last_message(many, gemini) == (
        "First line of the answer.\n\n - a point\n - another point\n\nLast line."
    )


def test_without_a_pattern_the_last_lines_are_the_message_and_without_a_match_none() -> None:
    plain = CONFIG.harness("command")  # no pattern: the screen's last five lines
    assert (
        last_message("one\ntwo\n\nthree\nfour\nfive\nsix", plain) == "two\nthree\nfour\nfive\nsix"
    )
    gemini = CONFIG.harness("gemini")  # no answer drawn yet: no message, not its footer
    assert last_message("starting\n" + "\n".join(CHROME), gemini) == ""


def test_a_pattern_without_a_text_group_is_the_whole_match_and_a_bad_one_is_refused() -> None:
    configured = Config.model_validate(
        {"attention": {"harnesses": {"mine": {"lastMessagePatterns": [r"(?m)^ANSWER: [^\n]*"]}}}}
    ).attention.harness("mine")
    assert last_message("ANSWER: one\nANSWER: two\n$ ", configured) == "ANSWER: two"
    try:
        Config.model_validate(
            {"attention": {"harnesses": {"mine": {"lastMessagePatterns": ["(unclosed"]}}}}
        )
    except ValueError as exc:
        assert "invalid regular expression" in str(exc)
    else:
        raise AssertionError("a bad pattern was taken")


def test_gemini_s_turn_is_over_when_its_hint_line_is_alone_over_its_input_box() -> None:
    gemini = CONFIG.harness("gemini")
    idle = classify(_screen("✦ FAKE-GEMINI-REPLY-4"), 0.0, 20.0, gemini)
    assert idle.state == store.WAITING and idle.rule.startswith("waitingPatterns[0]"), idle
    spinner = " ⠏ Thinking... (esc to cancel, 4s)"
    working = _screen().replace(
        CHROME[2], spinner + "? for shortcuts".rjust(WIDTH - 5 - len(spinner))
    )
    assert spinner in working
    assert classify(working, 0.0, 20.0, gemini).state == store.WORKING
