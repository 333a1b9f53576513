"""A confined agent is watched and resumed as before (SPEC §18): the real Claude Code in
``sandbox.mode: bwrap`` (network ``allowlist``) against the fake Messages API and the fake
GitHub. Its turns are metered (usage) and its transcript read; ``the-loop sessions attach``
(in a terminal of an outer tmux server) and the browser terminal's socket show its pane; after
the daemon restarts with the agent gone, the next comment resumes the same conversation in a
new sandbox. (Attention, the worktree's changes seen outside and what the agent cannot reach:
``test_sandbox_claude.py``.)"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest
import websockets

from tests.attention.test_claude_attention import REF, REPO, wait_state
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(400),
    pytest.mark.bwrap,
]


def reply(request: RecordedRequest) -> str:
    return f"FAKE-REPLY-{request.seq}" if request.is_conversation else "a title"


def session(daemon: Daemon) -> dict[str, object]:
    found = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()
    assert isinstance(found, dict)
    return found


def answered(api: FakeAnthropic, text: str) -> bool:
    return any(text in (r.prompt or "") for r in api.conversation_requests())


async def _terminal_shows(url: str, token: str, text: str, timeout: float) -> str:
    seen = b""
    headers = {"Authorization": f"Bearer {token}"}
    async with websockets.connect(url, additional_headers=headers) as socket:
        async with asyncio.timeout(timeout):
            while text.encode() not in seen:
                frame = await socket.recv()
                if isinstance(frame, bytes):
                    seen += frame
    return seen.decode("utf-8", "replace")


@pytest.fixture
def outer() -> Iterator[str]:
    """A tmux server of its own, whose pane is the operator's terminal."""
    name = f"the-loop-outer-{uuid.uuid4().hex[:10]}"
    yield name
    subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True, check=False)


def test_a_confined_claude_is_metered_attached_shown_and_resumed(
    work: Work, loop_env: Env, outer: str
) -> None:
    with claude_item(
        work,
        loop_env,
        reply,
        ["alice"],
        sandbox={"mode": "bwrap", "network": "allowlist"},
        tmux={"resumeProbeSeconds": 3},
    ) as (daemon, gh, api):
        _observe_and_resume(daemon, gh, api, loop_env, outer)


def _observe_and_resume(
    daemon: Daemon, gh: FakeGitHub, api: FakeAnthropic, loop_env: Env, outer: str
) -> None:
    first = wait_state(daemon, "waiting", 120, "claude-hook:Stop")
    assert "FAKE-REPLY" in first["lastMessage"]
    found = session(daemon)
    sid = str(found["id"])

    def metered() -> bool:
        usage = session(daemon).get("usage")
        return isinstance(usage, dict) and usage.get("turns", 0) >= 1

    wait_until(metered, 60, what="the confined agent's turn metered")
    # Claude Code writes a turn's last message to its transcript after its Stop hook ran (the
    # meter counts the turn from its prompt): the answer may reach the file a moment later
    conversation = wait_until(
        lambda: (
            (c := daemon.api("GET", f"/sessions/{sid}/conversation")).status_code == 200
            and "FAKE-REPLY" in c.text
            and c
        ),
        30,
        what="the answer in the confined agent's conversation",
    )
    assert conversation.json()["turns"][0]["steps"], conversation.text

    cli = [sys.executable, "-m", "the_loop", "sessions", "attach", REF, "--read-only"]
    env = [f"{k}={v}" for k, v in loop_env.process_env().items()]
    started = subprocess.run(
        ["tmux", "-L", outer, "-f", "/dev/null", "new-session", "-d", "-x", "100", "-y", "30",
         "--", "env", "-u", "TMUX", *env, *cli],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr

    def attached_screen() -> str:
        shown = subprocess.run(
            ["tmux", "-L", outer, "capture-pane", "-p"], capture_output=True, text=True
        )
        screens.append(shown.stdout)
        return shown.stdout if "Claude Code" in shown.stdout and "say hello" in shown.stdout else ""

    screens: list[str] = []
    subprocess.run(["tmux", "-L", outer, "set", "-g", "remain-on-exit", "on"], check=False)
    try:
        wait_until(attached_screen, 30, what="`sessions attach` showing the agent's pane")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the attached terminal shows: {screens[-1:]}") from None

    socket = daemon.url.replace("http://", "ws://") + f"/api/v1/sessions/{sid}/terminal"
    shown = asyncio.run(_terminal_shows(socket, daemon.token, "FAKE-REPLY", 30))
    assert "FAKE-REPLY" in shown

    target = str(found.get("tmuxTarget") or "")
    assert target, found
    daemon.stop()
    killed = subprocess.run(
        ["tmux", "-L", loop_env.socket, "kill-session", "-t", f"={target.split(':')[0]}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert killed.returncode == 0, killed.stderr
    daemon.start(FAKE_GH_TOKEN=gh.token)
    gh.add_comment(REPO, 1, "and the moons", author="alice")
    wait_until(lambda: answered(api, "and the moons"), 120, what="the comment after restart")
    last = api.last_conversation_request()
    assert last is not None
    texts = "\n".join(last.user_texts())
    assert "say hello" in texts and "and the moons" in texts, texts  # the same conversation
    respawned = daemon.api("GET", "/events", params={"type": "session.respawned"}).json()
    assert respawned and respawned[-1]["payload"]["resumed"] is True, respawned
    assert session(daemon)["harnessSessionId"] == found["harnessSessionId"]
