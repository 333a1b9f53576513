"""Claude Code's dismissed dialog as the-loop reads it once the permission hook left (decision
0091): "Interrupted" (a permission) or "Declined to answer Claude's questions" (a question) as
the conversation's last entry over the input box reads ``waiting``
(``attention.harnesses.claude.waitingPatterns``), a tip of Claude Code's own in between
included; an older "Interrupted" with a message, a tool call or its result under it does not
(a yes given in the terminal runs the tool: ``working``). Screens as the pinned Claude Code
drew them (the tails the look reads: blank lines dropped)."""

from __future__ import annotations

import re

import pytest

from the_loop.agent.attention.screen import tail_of
from the_loop.config.attention import AttentionConfig

RULE = "\u2500" * 120
INTERRUPTED = "  \u23bf \u00a0Interrupted \u00b7 What should Claude do instead?"
BOX = f"{RULE}\n\u276f\u00a0\n{RULE}\n  \u23f8 manual mode on \u00b7 ? for shortcuts"
DECLINED = (
    "\u25cf Declined to answer Claude's questions:\n"
    "  \u23bf \u00a0\u00b7 Which database? (SQLite / PostgreSQL)"
)
TIP = " " * 40 + "tmux focus-events off \u00b7 add 'set -g focus-events on' to ~/.tmux.conf"


def _dismissed(screen: str) -> bool:
    patterns = AttentionConfig().harness("claude").waiting_patterns
    return any(re.search(p, tail_of(screen)) for p in patterns)


@pytest.mark.parametrize(
    "screen",
    [
        f"  Did not run 1 call\n  \u23bf \u00a0$ echo ran-2 >> ran.txt\n{INTERRUPTED}\n\n{BOX}",
        f"  \u23bf \u00a0$ touch tool-1-ran.txt\n{INTERRUPTED}\n{TIP}\n{BOX}",
        f"  Please ASK me again.\n{DECLINED}\n\n{BOX}",
        f"{DECLINED}\n{TIP}\n{BOX}",
    ],
    ids=["esc", "esc-under-a-tip", "a-question-declined", "declined-under-a-tip"],
)
def test_a_dismissed_dialog_reads_as_waiting(screen: str) -> None:
    assert _dismissed(screen)


@pytest.mark.parametrize(
    "screen",
    [
        f"{INTERRUPTED}\n\u276f please RUN it\n\u25cf Bash(echo)\n  \u23bf  Running\u2026\n{BOX}",
        f"{INTERRUPTED}\n\u276f hello again\n{BOX}",
        f"{INTERRUPTED}\n\u25cf FAKE-REPLY-3\n{BOX}",
        f"\u25cf Bash(echo ran)\n  \u23bf  ran\n{BOX}",
        f"{DECLINED}\n\u25cf THANKS\n{BOX}",
        f"{DECLINED}\n\u276f hello\n{BOX}",
    ],
    ids=[
        "tool-runs-after-an-old-one",
        "a-message-after",
        "an-answer-after",
        "never",
        "answered-after-declining",
        "a-message-after-declining",
    ],
)
def test_anything_after_the_interruption_is_not_a_dismissed_dialog(screen: str) -> None:
    assert not _dismissed(screen)
