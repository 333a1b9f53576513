"""The ``attention:`` section: when a waiting agent is announced, how long an approval may
take, and how agents without signals of their own are read from their screen."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )


def _regexes(value: list[str]) -> list[str]:
    for pattern in value:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    return value


class HarnessAttention(_Model):
    """How one harness's attention is read."""

    signals: Literal["hooks", "notify", "screen", "none"] = Field(
        "screen",
        description=(
            "hooks: the harness reports its state itself through `the-loop hook` (Claude "
            "Code); notify: the harness reports finished turns through its notify program "
            "(Codex) and the screen detector reads prompts from the pane, without the quiet "
            "rule; screen: the screen detector reads the pane; none: not tracked."
        ),
    )
    permission_patterns: list[str] = Field(
        default_factory=list,
        description=(
            "Regular expressions (multi-line) that mark a permission prompt on screen. A "
            "named group `text` is the prompt's text (else the whole match); groups `tool` "
            "and `input` name what it asks about, read from the whole screen."
        ),
    )
    question_patterns: list[str] = Field(
        default_factory=list,
        description=(
            "Regular expressions (multi-line) that mark a question to a person (named groups "
            "as for `permissionPatterns`)."
        ),
    )
    waiting_patterns: list[str] = Field(
        default_factory=list,
        description=(
            "Regular expressions (multi-line) that mark, at the bottom of the screen, an agent "
            "waiting for input whose turn ended without its report (Codex interrupted by a "
            "denied request sends no notify); mostly for `notify` harnesses, which have no "
            "quiet rule. For a `hooks` harness, read only when its permission hook left "
            "without a decision: the dialog was dismissed in its terminal."
        ),
    )
    blocked_patterns: list[str] = Field(
        default_factory=list,
        description=(
            "Regular expressions (multi-line) that mark an agent that cannot work (not logged "
            "in, no key, the model API refusing or rate-limiting): read from the screen for "
            "every harness, hooks included; the matched line is the reason."
        ),
    )
    last_message_patterns: list[str] = Field(
        default_factory=list,
        description=(
            "Regular expressions (multi-line) that find the agent's last message on its screen "
            "when the screen says it waits: the last match of the first pattern that matches, "
            "its group `text` (else the whole match); none when none matches (no answer drawn "
            "yet). A harness without any: the screen's last five lines, which for a harness "
            "that draws its input box and footer under its answer are those."
        ),
    )
    allow_keys: list[str] = Field(
        default_factory=lambda: ["y"],
        description="tmux keys that answer a screen permission prompt with yes.",
    )
    deny_keys: list[str] = Field(
        default_factory=lambda: ["n"],
        description="tmux keys that answer a screen permission prompt with no.",
    )

    _check_permission = field_validator("permission_patterns")(_regexes)
    _check_question = field_validator("question_patterns")(_regexes)
    _check_blocked = field_validator("blocked_patterns")(_regexes)
    _check_waiting = field_validator("waiting_patterns")(_regexes)
    _check_last = field_validator("last_message_patterns")(_regexes)


GEMINI_NARROW_IDLE = (
    r"^(?![^\n]*esc to cancel)[^\n]*\n[ \t]*\u2500{3,79}[ \t]*\n(?:[^\n]*\n){0,3}?"
    r"[ \t]*> +Type your message or @path"
)
"""Gemini idle in a window under 80 columns, where it draws no ``? for shortcuts`` (decision
0106): its input box's rule, as wide as the window, with no spinner over it (``esc to
cancel``) and the empty box's placeholder under it. Its turn-over rule and its ready pattern
(``harness.gemini``) both read it. Multi-line: a pattern using it sets ``(?m)``."""


CODEX_COMPOSER = (
    r"^[\u203a!](?=[^\n]*\n(?:[ \t]*\n)*[ \t]+\S)(?:[ \t][^\n]*)?"
    r"(?:\n(?![ \t]*Press\s+enter\b)(?:[ \t]+\S[^\n]*|[ \t]*))*+\s*\Z"
)
"""Codex's composer, at any width (decision 0107): its marked line (U+203A; ``!`` in shell
mode), then only indented or blank lines to the bottom of the screen (the lines its text goes
on, then its footer), at least one of them drawn; none starts with ``Press enter``, as the
last line of every dialog that lists choices under that mark does. Its footer's ``? for
shortcuts`` is no mark of it: Codex leaves the hint out while the box holds text, and in a
narrow window (a phone viewing it) once the footer has more to say. Multi-line: a pattern
using it sets ``(?m)``. Its lines are taken without backtracking (``*+``): from each marked
line of the conversation, the match fails at the first line that is not indented, so a
screen is read in one pass."""


def _default_harnesses() -> dict[str, Any]:
    """Built-in defaults (plain data: validated into ``HarnessAttention`` like user input)."""
    return {
        "claude": {
            "signals": "hooks",
            # none read from its screen: a turn that fails on an API error (no login, no
            # credit, a rate limit) is told by its StopFailure hook, while the words it shows
            # ("Not logged in · Please run /login") stay in the conversation, and in the
            # history a resumed one draws, long after they stopped being true
            "blockedPatterns": [],
            # read only once its permission hook left without a decision (decision 0091): a
            # permission dismissed in its terminal (Esc, or "No") leaves "Interrupted · What
            # should Claude do instead?" as the conversation's last line over its input box
            # (a tip of Claude Code's own may come between, never a message, a tool or its
            # result: lines starting with U+276F, U+25CF or U+23BF); a question dismissed
            # there, "Declined to answer Claude's questions:" over the questions it listed
            # (indented lines); either way the agent waits
            "waitingPatterns": [
                r"(?m)^[ \t]*\u23bf[ \t\u00a0]+Interrupted\b[^\n]*\n"
                r"(?:[ \t]*+(?![\u276f\u25cf\u23bf\u2500])[^\n]*\n){0,3}"
                r"\u2500{10,}[ \t]*\n\u276f(?:[ \t\u00a0]|$)",
                r"(?m)^\u25cf Declined to answer Claude's questions\b[^\n]*\n"
                r"(?:[ \t]+(?![\u276f\u25cf])[^\n]*\n){0,6}"
                r"\u2500{10,}[ \t]*\n\u276f(?:[ \t\u00a0]|$)",
            ],
        },
        "codex": {
            "signals": "notify",
            # its approval dialog (a command, an edit) is often taller than the lines prompts
            # are matched in (a reason that wraps, a command of many lines; Codex clips a
            # taller one to the screen, "[… 108 lines] ^a view all"): it is found by its
            # bottom, the last lines of the screen ("2. No, and tell Codex what to do
            # differently (esc)" over "Press enter to confirm or esc to cancel", wrapped or
            # not); its question and what it asks about are read above that, inside the same
            # dialog: after the question and its paragraphs ("Environment: local", "Reason:
            # …", an edit's "Description: …") comes the command after "$ ", every line of it
            # up to the dialog's own choices (the last "1. Yes, proceed (y)" over that
            # bottom), or an edit's "Destination: …" lines
            "permissionPatterns": [
                r"(?m)^(?: *(?P<text>Would\s+you\s+like\s+to\s+(?:run\s+the\s+following\s+"
                r"command|make\s+the\s+following\s+edits)\?)[ \t]*\n(?:[ \t]*\n)+"
                r"(?:  \w[\w ]*: [^\n]*\n(?:[ \t]*\S[^\n]*\n)*(?:[ \t]*\n)+)*"
                r"(?:  (?!\$ |Destination: )\S[^\n]*\n)*"
                r"  (?:\$ |(?=Destination: ))(?P<input>[^\n]*+(?:\n[^\n]*+)*)"
                r"\n(?:[ \t]*\n)*[\u203a ] 1\. Yes, proceed \(y\)[ \t]*\n(?:[^\n]*\n)*?)?"
                r"[\u203a ] \d\. No,\s+and\s+tell\s+Codex\s+what\s+to\s+do\s+differently\s+\(esc\)"
                r"(?=\s*\n\s*Press\s+enter\s+to\s+confirm\s+or\s+esc\s+to\s+cancel[ \t]*\Z)",
                r"Allow this request and continue",
            ],
            "allowKeys": ["y"],
            "denyKeys": ["Escape"],
            # a denied request (Escape) interrupts its turn and no notify follows: the
            # interruption right over its empty composer and footer is a wait for input
            "waitingPatterns": [
                r"(?m)^\u25a0 Conversation interrupted[^\n]*(?:\n[ \t]+\S[^\n]*)*\n"
                + CODEX_COMPOSER
            ],
            # a failed turn's line right above its input box (U+203A, then its footer), not
            # once a later turn is under it; the input box under it (group input_box) means
            # the next message is the retry: it holds nothing, so the old line a resumed
            # conversation redraws cannot hold messages for good
            "blockedPatterns": [
                r"(?m)^[^\n]*?(?P<text>Not logged in[^\n]*)\n(?:(?!\u203a )[^\n]*\n)?"
                r"(?P<input_box>\u203a [^\n]*)(?:\n[^\n]*){0,3}\Z",
                r"(?m)^[^\n]*?(?P<text>401 Unauthorized[^\n]*)\n(?:(?!\u203a )[^\n]*\n)?"
                r"(?P<input_box>\u203a [^\n]*)(?:\n[^\n]*){0,3}\Z",
                # no login and no provider of its own: its sign-in choice, before anything
                # else; the list's last choice and its footer, the heading above as the reason
                r"(?m)^(?:[^\n]*?(?P<text>Choose how you want to use Codex)[^\n]*\n"
                r"(?:[^\n]*\n){0,12}?)?[^\n]*\d\. Sign in another way[^\n]*\n"
                r"(?:[^\n]*\n){0,3}?[ \t]*Press enter to continue[ \t]*\Z",
            ],
        },
        "demo": {
            # the offline demo agent answers at once and then shows its prompt alone on the
            # last line: it waits from there, not after quietSeconds; its answer is its
            # "demo: " lines from "message N received"
            "waitingPatterns": [r"(?m)^demo>[ \t]*\Z"],
            "lastMessagePatterns": [
                r"(?m)^(?P<text>demo: message \d+ received[^\n]*(?:\ndemo: [^\n]*)*)"
            ],
        },
        "gemini": {
            # its confirmation dialog (shell, edit, fetch, MCP tool): the question over the
            # numbered choices, "1. Allow once" first; Escape is "No, suggest changes"
            # and, above it in the same box, the tool and what it is about to do
            # ("│ ? Shell  echo hi > hi.txt", "│ ? WriteFile  Writing to notes.md")
            "permissionPatterns": [
                r"(?m)^(?:│ \? (?P<tool>\w+) +(?P<input>[^\n]*?) *│?\n(?:│[^\n]*\n){0,40}?)?"
                r"[^\n]*?(?P<text>Allow execution of [^\n]*?\?|Apply this change\?"
                r"|Do you want to proceed\?)(?=(?:[^\n]*\n){1,6}[^\n]*1\. Allow once)",
            ],
            "allowKeys": ["1"],
            "denyKeys": ["Escape"],
            # its turn over: the hint line alone right over the rule of its input box (while it
            # works, its spinner "⠏ Thinking... (esc to cancel, 4s)" is on that line), so it
            # reads waiting at once, not after quietSeconds. Under 80 columns (a phone viewing
            # it: its window follows the viewer) it draws no hint there: the rule, as wide as
            # the window, has no spinner over it and its empty box under it (decision 0106)
            "waitingPatterns": [
                r"(?m)^[ \t]*\? for shortcuts[ \t]*\n[ \t]*\u2500{3,}[^\n]*$",
                f"(?m){GEMINI_NARROW_IDLE}",
            ],
            # its answer starts with "✦ " (the lines after it indented), and ends at the rule
            # over its input box, a "? for shortcuts" line, or the next prompt (" > ")
            "lastMessagePatterns": [
                r"(?m)^\u2726 (?P<text>[^\n]*(?:\n(?![ \t]*\u2500{3,}|[ \t]*\? for shortcuts"
                r"| > )[^\n]*)*)"
            ],
            # no sign-in chosen (a home without its settings): it asks how before anything
            # else; the bottom of that box, and its question above it as the reason
            "blockedPatterns": [
                r"(?m)^(?:[^\n]*?(?P<text>How would you like to authenticate[^\n│]*?) *│?\n"
                r"(?:│[^\n]*\n){0,30}?)?[^\n]*Terms of Services and Privacy Notice for Gemini"
            ],
        },
    }


class AttentionConfig(_Model):
    """Attention and approvals: which agent waits for a person, and answers from where they are."""

    notify_after_seconds: float = Field(
        120.0,
        ge=0,
        description=(
            "After this long in needs-input or needs-permission, or with a message held "
            "behind unsent text in the agent's input box, one notice is posted on the work "
            "item mentioning the person who started the session."
        ),
    )
    answer_timeout_minutes: float = Field(
        0.0,
        ge=0,
        description=(
            "How long a prompt (permission or question, from hooks or the screen) waits for "
            "an answer through the-loop before `onTimeout` applies; 0 waits forever."
        ),
    )
    on_timeout: Literal["wait", "deny", "leave"] = Field(
        "wait",
        description=(
            "When nobody answers in time: wait (nothing happens; the prompt stays answerable "
            "through the-loop), deny (a permission is denied, as if a person had; a question "
            "is left), or leave (the-loop stops tracking the prompt; it waits at the agent, "
            "answerable in its terminal)."
        ),
    )
    quiet_seconds: float = Field(
        20.0, gt=0, description="Screen detector: a pane unchanged this long is waiting."
    )
    poll_seconds: float = Field(
        0.25,
        gt=0,
        le=10,
        description="The least time between two passes of the screen detector, timeouts, "
        "notices and spend policy while something changes or waits (they run when something "
        "happens, not on a beat; a pane that printed is read at once).",
    )
    harnesses: dict[str, HarnessAttention] = Field(
        default_factory=_default_harnesses,
        description=(
            "Per harness: signals and prompt patterns (harnesses not listed: screen). A "
            "built-in harness listed keeps the built-in settings it does not set."
        ),
    )

    @field_validator("harnesses", mode="before")
    @classmethod
    def _over_the_built_ins(cls, given: Any) -> Any:
        """Each harness listed keeps the built-in settings it does not set itself: a harness
        added for one tool must not drop Claude Code's hooks, nor Codex's and Gemini's dialog
        patterns (a dialog no pattern matches takes any message delivered into it)."""
        if not isinstance(given, dict):
            return given
        merged = _default_harnesses()
        for name, entry in given.items():
            built_in = merged.get(name)
            if isinstance(entry, dict) and isinstance(built_in, dict):
                merged[name] = {**built_in, **{to_camel(k): v for k, v in entry.items()}}
            else:
                merged[name] = entry
        return merged

    def harness(self, name: str, adapter: str | None = None) -> HarnessAttention:
        """The attention settings of harness NAME, else of its ADAPTER (screen detection when
        neither is listed)."""
        found = self.harnesses.get(name) or self.harnesses.get(adapter or name)
        return found or HarnessAttention()
