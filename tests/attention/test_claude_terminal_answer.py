"""A dialog answered in the agent's own terminal, with the real Claude Code against the fake
Messages API (decision 0091): a person at ``sessions attach`` dismisses the permission dialog
with Esc after a person's pace; Claude Code ends the-loop's waiting hook and waits for input,
with no report. The-loop reads the pane once the hook left: the prompt closes, the agent reads
waiting ("Interrupted" over its input box), and the message held behind the dialog reaches it
exactly once; an allow for the closed prompt is refused as stale, and the tool never ran. The
same for a question dialog, and after a daemon restart (Esc pressed while the daemon was away,
so no hook comes back). A hook that dies while the dialog stays up (killed), or before Claude
Code has drawn it, leaves the prompt pending and the message held: only the dialog's leaving
the screen ends the wait, which the-loop looks for again every few seconds.
"""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.attention.test_claude_attention import (
    REF,
    REPO,
    attention_of,
    tool_results,
    wait_state,
)
from tests.attention.test_claude_gate import item_at, screen_text, user_text
from tests.attention.test_claude_question import answer_of
from tests.attention.test_claude_question import reply as asking
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.spend.memory import tree_pids

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
PACE = 15.0
HOOK = "from the_loop.hook import main"
NOTICE_LATE = 300.0
"""``notifyAfterSeconds``: no notice is posted while these tests run."""


def _asking(daemon: Daemon, gh: FakeGitHub, ask: str = "RUN-TOOL-1") -> dict[str, Any]:
    """Once the first turn is over, ask for ASK (tool 1, or a question) and hold a comment
    behind its dialog."""
    wait_state(daemon, "waiting", 120, "claude-hook:Stop")
    gh.add_comment(REPO, 1, f"please {ask} now", author="alice")
    asked = wait_until(lambda: attention_of(daemon).get("prompt"), 90, what="the dialog")
    # Claude Code reports the dialog before it draws it: a key pressed before then misses it
    wait_until(lambda: "Esc to cancel" in screen_text(daemon), 30, what="the dialog drawn")
    gh.add_comment(REPO, 1, "HELD-ONE from a comment", author="alice")
    wait_until(lambda: _events(daemon, "session.held"), 30, what="the comment held")
    return asked  # type: ignore[no-any-return]


def _events(daemon: Daemon, kind: str) -> list[dict[str, Any]]:
    return daemon.api("GET", "/events", params={"type": kind, "limit": 100}).json()  # type: ignore[no-any-return]


def _keys(work: Work, *keys: str) -> None:
    """A person at the agent's terminal presses KEYS."""
    target = work.session_json(REF)["tmuxTarget"]
    sent = work.tmux("send-keys", "-t", f"={target}:", *keys)
    assert sent.returncode == 0, sent.stderr


def _hooks_of(work: Work) -> list[int]:
    """The hook processes running under the agent's pane."""
    target = work.session_json(REF)["tmuxTarget"]
    found: list[int] = []
    for pid in tree_pids({"pane": [work.pane_pid(target)]})["pane"]:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # ended meanwhile
        if HOOK.encode() in argv and b"claude" not in argv:
            found.append(pid)
    return found


def _allow(daemon: Daemon, prompt_id: str) -> int:
    session = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["id"]
    answered = daemon.api(
        "POST",
        f"/sessions/{session}/permission",
        json={"decision": "allow", "promptId": prompt_id, "actor": "alice"},
    )
    return answered.status_code


def _page(daemon: Daemon, path: str) -> str:
    """The dashboard's page at PATH, as a person logged in with the full token sees it."""
    with httpx.Client(base_url=daemon.url, timeout=30) as client:
        assert client.post("/login", json={"token": daemon.token}).status_code == 200
        page = client.get(path)
        assert page.status_code == 200, page.text
        return page.text


def _dismissed(daemon: Daemon, api: FakeAnthropic, asked: dict[str, Any]) -> None:
    """The dialog dismissed in the terminal: its prompt closed, the agent read waiting, the
    held comment delivered once, and an answer for the closed prompt refused."""
    wait_until(lambda: attention_of(daemon).get("prompt") is None, 30, what="the wait ended")
    left = [e["payload"] for e in _events(daemon, "hook.left")]
    assert left == [{"agent": left[0]["agent"], "promptId": asked["id"], "dialog": "gone"}], left
    read = [
        (c["from"], c["to"])
        for c in (e["payload"] for e in _events(daemon, "session.attention_changed"))
        if "in the agent's terminal" in c["rule"]
    ]
    waited = "needs-input" if asked["kind"] == "question" else "needs-permission"
    assert read == [(waited, "waiting")]  # dismissed: it waits for input
    text = wait_until(lambda: "HELD-ONE" in user_text(api) and user_text(api), 60, what="HELD-ONE")
    assert text.count("HELD-ONE") == 1
    if asked["kind"] == "permission":
        assert _allow(daemon, asked["id"]) == 409  # stale: the dialog is gone
    history = daemon.api("GET", f"/attention-history/{quote(REF, safe=':/')}").json()
    assert (history[0]["id"], history[0]["decision"], history[0]["outcome"]) == (
        asked["id"],
        None,
        "moved-on",
    )


def _not_run(daemon: Daemon, api: FakeAnthropic) -> None:
    """Tool 1 was refused (Claude Code says so to the model) and never ran."""
    results = tool_results(api, "toolu_1")
    assert results and results[0]["is_error"] is True
    cwd = Path(daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["cwd"])
    assert not (cwd / "tool-1-ran.txt").exists()


def test_a_dialog_dismissed_in_the_agents_terminal_lets_what_it_held_through(
    work: Work, loop_env: Env
) -> None:
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        since = time.monotonic()
        wait_until(lambda: time.monotonic() - since >= PACE, PACE + 5, what="a person's pace")
        assert attention_of(daemon)["prompt"]["id"] == asked["id"]
        assert "HELD-ONE" not in user_text(api)
        _keys(work, "Escape")
        _dismissed(daemon, api, asked)
        _not_run(daemon, api)


def test_a_question_dismissed_in_the_agents_terminal(work: Work, loop_env: Env) -> None:
    attention = {"notifyAfterSeconds": NOTICE_LATE, "pollSeconds": 0.1}
    with claude_item(work, loop_env, asking, ["alice"], attention=attention) as running:
        daemon, gh, api = running
        asked = _asking(daemon, gh, "ASK-ME-1")
        assert asked["kind"] == "question"
        _keys(work, "Escape")
        _dismissed(daemon, api, asked)
        declined = answer_of(api, "toolu_ask_1")  # the model hears nobody chose
        assert "tool use was rejected" in declined, declined


def test_a_dialog_dismissed_while_the_daemon_was_away(work: Work, loop_env: Env) -> None:
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        daemon.stop()
        _keys(work, "Escape")
        wait_until(lambda: not _hooks_of(work), 30, what="the hook ended by Claude Code")
        daemon.start(FAKE_GH_TOKEN=gh.token)
        _dismissed(daemon, api, asked)
        _not_run(daemon, api)


def test_a_hook_that_died_with_its_dialog_up_leaves_the_wait_to_the_terminal(
    work: Work, loop_env: Env
) -> None:
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        hooks = wait_until(lambda: _hooks_of(work), 30, what="the waiting hook")
        for pid in hooks:
            os.kill(pid, 9)
        found = wait_until(lambda: _events(daemon, "hook.left"), 30, what="the look at the pane")
        assert [e["payload"]["dialog"] for e in found] == ["shown"]
        now = attention_of(daemon)
        assert now["state"] == "needs-permission" and now["prompt"]["id"] == asked["id"]
        assert "Esc to cancel" in screen_text(daemon)  # Claude Code's own dialog waits there
        assert "HELD-ONE" not in user_text(api) and not tool_results(api, "toolu_1")

        _keys(work, "Enter")  # answered there: 1. Yes
        wait_until(lambda: tool_results(api, "toolu_1"), 30, what="the tool result")
        assert tool_results(api, "toolu_1")[0]["is_error"] is False
        text = wait_until(
            lambda: "HELD-ONE" in user_text(api) and user_text(api), 60, what="HELD-ONE"
        )
        assert text.count("HELD-ONE") == 1


def test_a_hook_that_died_before_its_dialog_was_drawn_holds_everything_until_it_is_answered(
    work: Work, loop_env: Env
) -> None:
    """Claude Code reports its dialog about 0.5 s before it draws it, and its input box shows
    until then: a look in that moment must not take the dialog for gone. Its own dialog, left
    waiting in the terminal, is looked at again: dismissed there, the held message goes on."""
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        wait_state(daemon, "waiting", 120, "claude-hook:Stop")
        gh.add_comment(REPO, 1, "please RUN-TOOL-1 now", author="alice")
        asked = wait_until(lambda: attention_of(daemon).get("prompt"), 90, what="the report")
        drawn = "Esc to cancel" in screen_text(daemon)
        for pid in wait_until(lambda: _hooks_of(work), 30, what="the waiting hook"):
            os.kill(pid, 9)
        session = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["id"]
        said = daemon.api("POST", f"/sessions/{session}/messages", json={"text": "HELD-ONE"})
        assert "held behind a permission prompt" in said.text, said.text
        found = wait_until(lambda: _events(daemon, "hook.left"), 30, what="the look at the pane")
        assert [e["payload"]["dialog"] for e in found] == ["shown"], f"drawn at once: {drawn}"
        now = attention_of(daemon)
        assert now["state"] == "needs-permission" and now["prompt"]["id"] == asked["id"]
        assert "Esc to cancel" in screen_text(daemon)
        assert "HELD-ONE" not in user_text(api) and not tool_results(api, "toolu_1")

        _keys(work, "Escape")  # Claude Code's own dialog, dismissed there: looked at again
        _waits_again(daemon, api, ["shown", "gone"])


def _waits_again(daemon: Daemon, api: FakeAnthropic, looks: list[str]) -> None:
    """Esc pressed on a dialog still shown after its hook left: the pane, looked at again
    (LOOKS: what each look found), ends the wait; the agent reads waiting, and the held
    comment goes on once."""
    wait_until(lambda: attention_of(daemon).get("prompt") is None, 30, what="the wait ended")
    assert [e["payload"]["dialog"] for e in _events(daemon, "hook.left")] == looks
    read = [
        (c["from"], c["to"])
        for c in (e["payload"] for e in _events(daemon, "session.attention_changed"))
        if "in the agent's terminal" in c["rule"]
    ]
    assert read == [("needs-permission", "waiting")]
    text = wait_until(lambda: "HELD-ONE" in user_text(api) and user_text(api), 60, what="HELD")
    assert text.count("HELD-ONE") == 1


def _ended_by_esc(
    daemon: Daemon, api: FakeAnthropic, asked: dict[str, Any], looks: list[str]
) -> None:
    """Esc in the terminal ends a wait whose allow no hook took (``_waits_again``): the prompt
    closes moved-on with the allow still named, as not taken, and the tool never ran."""
    _waits_again(daemon, api, looks)
    history = daemon.api("GET", f"/attention-history/{quote(REF, safe=':/')}").json()
    assert (history[0]["id"], history[0]["decision"], history[0]["outcome"]) == (
        asked["id"],
        "allow",
        "moved-on",
    )
    assert history[0]["untaken"] is True
    listed = daemon.work.cli("attention", "history", REF).stdout.splitlines()
    assert "allow (not taken)" in next(line for line in listed if asked["id"] in line)
    _not_run(daemon, api)


def test_an_allow_no_hook_took_still_lets_the_terminal_end_the_wait(
    work: Work, loop_env: Env
) -> None:
    """The hook died with its dialog up; an allow is then recorded but nobody takes it. While
    the allow waits to be taken, the dialog is dismissed in the terminal: the wait ends, and
    the allow is told it was not taken (409), not that it was (200)."""
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        for pid in wait_until(lambda: _hooks_of(work), 30, what="the waiting hook"):
            os.kill(pid, signal.SIGKILL)
        found = wait_until(lambda: _events(daemon, "hook.left"), 30, what="the look at the pane")
        assert [e["payload"]["dialog"] for e in found] == ["shown"]
        with ThreadPoolExecutor(1) as pool:
            allowed = pool.submit(_allow, daemon, asked["id"])
            wait_until(
                lambda: attention_of(daemon)["prompt"]["decision"] == "allow", 10, what="recorded"
            )
            now = attention_of(daemon)
            assert now["state"] == "needs-permission" and now["prompt"]["id"] == asked["id"]
            assert "Esc to cancel" in screen_text(daemon) and "HELD-ONE" not in user_text(api)
            page = _page(daemon, f"/sessions/{now['sessionId']}")  # still waiting, and says why
            assert "Waiting for you" in page and "has not taken the answer yet" in page
            assert ">Allow</button>" not in page  # answered already
            _keys(work, "Escape")
            assert allowed.result() == 409  # the agent never took it
        _ended_by_esc(daemon, api, asked, ["shown", "gone"])


def test_a_hook_that_went_away_before_it_took_its_allow(work: Work, loop_env: Env) -> None:
    """The decision is sent, but the hook never says it took it (stopped, then killed): the
    pane is read as when a hook leaves without one, and the dialog Claude Code still shows
    ends the wait once it is answered in the terminal."""
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        hooks = wait_until(lambda: _hooks_of(work), 30, what="the waiting hook")
        for pid in hooks:
            os.kill(pid, signal.SIGSTOP)
        session = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()["id"]
        answered = daemon.api(
            "POST",
            f"/sessions/{session}/permission",
            json={"decision": "allow", "promptId": asked["id"], "actor": "alice"},
        )
        assert answered.status_code == 503  # sent; the hook never took it
        told = answered.json()["error"]["message"]
        assert f"the-loop sessions attach {session}" in told, told  # where to answer it
        found = wait_until(lambda: _events(daemon, "hook.left"), 30, what="the look at the pane")
        assert [e["payload"]["dialog"] for e in found] == ["shown"]
        for pid in hooks:
            os.kill(pid, signal.SIGKILL)
        assert attention_of(daemon)["state"] == "needs-permission"
        assert "Esc to cancel" in screen_text(daemon) and "HELD-ONE" not in user_text(api)
        _keys(work, "Escape")
        _ended_by_esc(daemon, api, asked, ["shown", "gone"])


def test_an_allow_no_hook_took_across_a_restart(work: Work, loop_env: Env) -> None:
    """The same after the daemon restarted: no hook comes back for the prompt, answered or
    not, so its pane is read again, and Esc there ends the wait."""
    with item_at(work, loop_env, NOTICE_LATE) as (daemon, gh, api):
        asked = _asking(daemon, gh)
        for pid in wait_until(lambda: _hooks_of(work), 30, what="the waiting hook"):
            os.kill(pid, signal.SIGKILL)
        wait_until(lambda: _events(daemon, "hook.left"), 30, what="the look at the pane")
        assert _allow(daemon, asked["id"]) == 503  # recorded; no hook is there to take it
        daemon.stop()
        daemon.start(FAKE_GH_TOKEN=gh.token)
        wait_until(lambda: len(_events(daemon, "hook.left")) == 2, 30, what="the look again")
        assert attention_of(daemon)["state"] == "needs-permission"
        _keys(work, "Escape")
        _ended_by_esc(daemon, api, asked, ["shown", "shown", "gone"])
