"""A turn interrupted in the agent's terminal (decision 0093), with the real Claude Code against
the fake Messages API: a person at ``sessions attach`` presses Esc while the model is still
answering. Claude Code runs no hook for an interrupted turn, so the session read ``working``
for good. The-loop reads the pane of an agent at work that it has not heard of for
``SILENT_SECONDS``: its input box with no "esc to interrupt" under it is an idle agent, so it
reads ``waiting``. Whether a screen is idle is decided by ``ClaudeAdapter.idle_pattern``, on
screens as the pinned Claude Code drew them: at work (thinking, a tool running) it is not."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from datetime import datetime

import pytest

from tests.attention.test_claude_attention import REF, REPO, wait_state
from tests.attention.test_claude_gate import screen_text
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.fakes.fake_anthropic import RecordedRequest
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.screen import tail_of
from the_loop.agent.attention.silent import SILENT_SECONDS
from the_loop.harness.claude import CLAUDE_IDLE_PATTERN

RULE = "\u2500" * 120
FOOTER = "  \u23f8 manual mode on"
WORKING = f"{RULE}\n\u276f\u00a0\n{RULE}\n{FOOTER} \u00b7 esc to interrupt"
IDLE = f"{RULE}\n\u276f\u00a0\n{RULE}\n{FOOTER} \u00b7 ? for shortcuts"
PUT_BACK = f"{RULE}\n\u276f Message from alice about {REF}:\n  SLOW-TURN now\n{RULE}\n{FOOTER}"
INTERRUPTED = "  \u23bf \u00a0Interrupted \u00b7 What should Claude do instead?"


def _idle(screen: str) -> bool:
    return re.search(CLAUDE_IDLE_PATTERN, tail_of(screen)) is not None


@pytest.mark.parametrize(
    "screen",
    [
        f"\u25cf FAKE-REPLY-2\n\u273b Brewed for 0s\n{IDLE}",
        f"  \u23bf \u00a0$ sleep 15; echo slept\n{INTERRUPTED}\n{IDLE}",
        f"\u273b Brewed for 0s\n{PUT_BACK}",
        f"\u25cf FAKE-REPLY-2\n{RULE}\n\u276f\n{RULE}",
    ],
    ids=["after-a-turn", "interrupted", "a-message-put-back", "no-footer"],
)
def test_an_input_box_with_nothing_running_is_idle(screen: str) -> None:
    assert _idle(screen)


@pytest.mark.parametrize(
    "screen",
    [
        f"\u00b7 Pondering\u2026 (13s \u00b7 \u2193 1 tokens)\n{WORKING}",
        f"  \u23bf  $ sleep 15; echo slept (12s)\n     (ctrl+b ctrl+b (twice) to run in "
        f"background)\n\u00b7 Pondering\u2026 (13s)\n{WORKING}",
        " Bash command\n   touch ran.txt\n Do you want to proceed?\n \u276f 1. Yes\n   2. No\n\n"
        " Esc to cancel \u00b7 Tab to amend",
        f"\u25cf FAKE-REPLY-2\n{RULE}\n\u276f\u00a0\n{RULE}\n{FOOTER}\n  more\n  and more",
    ],
    ids=["thinking", "a-tool-running", "a-dialog", "more-than-a-footer-under-it"],
)
def test_a_turn_at_work_or_a_dialog_is_not_idle(screen: str) -> None:
    assert not _idle(screen)


HOLD = threading.Event()
SLOW: list[int] = []


def reply(request: RecordedRequest) -> str:
    """Plain answers; the model "thinks" about the first SLOW-TURN until the test is over."""
    if not request.is_conversation:
        return "a title"
    if "SLOW-TURN" in (request.prompt or "") and not SLOW:
        SLOW.append(request.seq)
        HOLD.wait(180)
        return "SLOW-DONE"
    return f"FAKE-REPLY-{request.seq}"


@pytest.fixture
def held() -> Iterator[None]:
    HOLD.clear()
    SLOW.clear()
    yield
    HOLD.set()  # the fake answers, so that its thread ends


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_turn_interrupted_in_the_terminal_reads_waiting(
    work: Work, loop_env: Env, held: None
) -> None:
    with claude_item(work, loop_env, reply, ["alice"]) as (daemon, gh, api):
        wait_state(daemon, "waiting", 120, "claude-hook:Stop")
        gh.add_comment(REPO, 1, "please SLOW-TURN now", author="alice")
        wait_until(
            lambda: any("SLOW-TURN" in p for p in api.user_prompts()), 60, what="the slow turn"
        )
        asked = wait_state(daemon, "working", 60, "claude-hook:UserPromptSubmit")
        wait_until(lambda: "esc to interrupt" in screen_text(daemon), 30, what="at work")
        target = work.session_json(REF)["tmuxTarget"]
        pressed = work.tmux("send-keys", "-t", f"={target}:", "Escape")
        assert pressed.returncode == 0, pressed.stderr
        wait_until(lambda: "esc to interrupt" not in screen_text(daemon), 30, what="stopped")
        found = wait_state(daemon, "waiting", SILENT_SECONDS + 60, "screen")
        assert found["rule"].startswith(f"no report for {SILENT_SECONDS:g}s"), found
        silent = _at(found["since"]) - _at(asked["since"])
        assert silent >= SILENT_SECONDS, (asked, found)  # not before it was unheard of so long
        # Claude Code put the interrupted message back in its input box (the model had not
        # answered yet): the next message joins it there, and is delivered as ever
        gh.add_comment(REPO, 1, "hello again", author="alice")
        wait_until(
            lambda: any("hello again" in p for p in api.user_prompts()), 60, what="next message"
        )
        wait_state(daemon, "waiting", 60, "claude-hook:Stop")
