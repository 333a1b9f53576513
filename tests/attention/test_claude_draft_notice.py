"""A comment held behind a person's draft is told on the item once the wait lasts (decision
0104): the real Claude Code against the fake Messages API, started from an issue on the fake
GitHub. Someone typed text into the agent's input box and walked away; the comment that came
then waits (decision 0101). After ``attention.notifyAfterSeconds`` one marked comment on the
item says why, once; the comment reaches the model, alone, once the text is cleared. Before,
the commenter heard nothing for as long as the draft stayed."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest

from tests.attention.test_claude_attention import REF, REPO, comments, reply, wait_state
from tests.attention.test_claude_submit import apart, reached, type_draft
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [pytest.mark.claude, pytest.mark.slow, pytest.mark.timeout(300)]
NOTICE = "someone typed text into the agent's input box"
NOTIFY_AFTER = 3.0


def test_a_comment_held_behind_a_draft_is_told_once_on_the_item(work: Work, loop_env: Env) -> None:
    attention = {"notifyAfterSeconds": NOTIFY_AFTER, "pollSeconds": 0.1}
    first = "the-loop do OSCAR-1 say hello"
    with claude_item(work, loop_env, reply, ["alice"], first, attention=attention) as running:
        daemon, gh, api = running
        wait_state(daemon, "waiting", 120, "claude-hook:Stop")
        target = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["tmuxTarget"]
        type_draft(work, target, "PAPA typed by a person")

        gh.add_comment(REPO, 1, "QUEBEC-2 from a comment", author="alice")
        held = time.monotonic()
        wait_until(lambda: comments(gh, NOTICE), 60, what="the notice of the wait")
        assert time.monotonic() - held >= NOTIFY_AFTER - 0.5  # not before it lasted
        told = comments(gh, NOTICE)
        assert len(told) == 1 and told[0].startswith("@alice "), told
        assert "delivered, on its own, once that text is sent or cleared" in told[0]
        assert reached(api, ["QUEBEC-2"]) is None  # still waiting behind the draft

        since = time.monotonic()  # several more looks at the box: still one notice
        wait_until(lambda: time.monotonic() - since >= 3 * NOTIFY_AFTER, 30, what="more looks")
        assert len(comments(gh, NOTICE)) == 1
        work.tmux("send-keys", "-t", f"={target}:", "C-u")  # the person clears it
        sent = wait_until(lambda: reached(api, ["QUEBEC-2"]), 60, what="the comment, cleared")
        apart(sent, ["OSCAR-1", "QUEBEC-2"])
        assert len(comments(gh, NOTICE)) == 1
