"""The agent's last message read from its screen (``lastMessagePatterns``): Gemini draws its input
box, hints and footer under its answer, so the screen's last lines were that chrome ("Shift+Tab
to accept edits", "Type your message or @path/to/file", its workspace and sandbox), which the
Attention page showed as "the agent's last message" and a Slack thread got as the turn's
answer. Its built-in pattern reads the answer after its "✦ " mark, up to the rule over its
input box. The screens are laid out as the pinned Gemini CLI (0.61) draws them."""

from __future__ import annotations

from the_loop.agent.attention.screen import last_message
from the_loop.config import Config

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


def test_without_a_pattern_that_matches_the_last_lines_are_the_message() -> None:
    plain = CONFIG.harness("command")  # no pattern: the screen's last five lines
    assert (
        last_message("one\ntwo\n\nthree\nfour\nfive\nsix", plain) == "two\nthree\nfour\nfive\nsix"
    )
    gemini = CONFIG.harness("gemini")  # no answer drawn yet: the same
    assert last_message("starting\n" + "\n".join(CHROME), gemini).endswith(
        "no sandbox" + " " * 73 + "Auto"
    )


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
