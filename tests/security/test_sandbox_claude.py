"""The real Claude Code, confined (``sandbox.mode: bwrap``, ``network: allowlist``) under the
daemon, against the fake Messages API (reached through the egress proxy: the only way out of
its network namespace) and the fake GitHub: its hooks report through the hook channel bound
into the sandbox; a Bash tool use asks, an authorized ``the-loop allow`` lets it run, and what
it runs finds nothing of the control plane (state database, config file, the daemon's
``/proc`` entry, the tmux socket, another worktree, a loopback port not allowlisted — that
refusal logged as ``sandbox.egress_refused``); the transcript the daemon reads is the one in
the agent's own home."""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from tests.attention.test_claude_attention import (
    REF,
    REPO,
    attention_of,
    comments,
    tool_results,
    wait_state,
    workspace,
)
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.daemon.serve import read_info

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.bwrap,
]
PROBE: dict[str, str] = {}
"""The Bash command the fake model asks to run (set once the paths are known)."""


def reply(request: RecordedRequest) -> str | ToolUse:
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return f"DONE-AFTER-TOOL-{request.seq}"
    if "RUN-PROBE" in (request.prompt or ""):
        return ToolUse("Bash", {"command": PROBE["command"], "description": "probe"}, "toolu_p")
    return f"FAKE-REPLY-{request.seq}"


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hi\n")


@pytest.fixture
def closed_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def probe_command(env: Env, daemon_pid: int, other: str, port: int, python: str) -> str:
    checks = {
        "database": f"head -c 16 '{env.state_dir}/the-loop.db' | grep -q SQLite",
        "config": f"grep -q stateDir '{env.config_path}'",
        "environ": f"grep -q = /proc/{daemon_pid}/environ",
        "tmux": f"tmux -L {env.socket} list-sessions",
        "other-tree": f"cat '{other}/secret.txt'",
        "loopback": f"{python} -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 3)'",  # noqa: E501
        "outside": f"{python} -c 'import urllib.request as u; u.urlopen(\"http://example.org/\", timeout=5)'",  # noqa: E501
        "root": 'test "$(id -u)" = 0',
    }
    lines = [
        f"if {command} >/dev/null 2>&1; then echo {name}:OPEN; else echo {name}:DENIED; fi"
        for name, command in checks.items()
    ]
    return "{ " + "; ".join(lines) + "; } > probe.txt; echo probed"


@pytest.fixture
def setup(work: Work, loop_env: Env) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic]]:
    with claude_item(
        work,
        loop_env,
        reply,
        ["alice"],
        attention={"notifyAfterSeconds": 30, "pollSeconds": 0.1},
        sandbox={"mode": "bwrap", "network": "allowlist"},
    ) as running:
        yield running


def test_confined_claude_works_and_reaches_nothing_of_the_control_plane(
    setup: tuple[Daemon, FakeGitHub, FakeAnthropic], loop_env: Env, closed_port: int
) -> None:
    daemon, gh, api = setup
    first = wait_state(daemon, "waiting", 120, "claude-hook:Stop")  # hooks, through the sandbox
    assert "FAKE-REPLY" in first["lastMessage"]  # the fake API, through the egress proxy

    other = loop_env.root / "state" / "workspaces" / "someone-else"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("not yours\n")
    info = read_info(loop_env.state_dir)
    assert info is not None
    python = "/usr/bin/python3"
    PROBE["command"] = probe_command(loop_env, info.pid, str(other), closed_port, python)

    gh.add_comment(REPO, 1, "please RUN-PROBE now", author="alice")
    asked = wait_state(daemon, "needs-permission")
    assert asked["prompt"]["tool"] == "Bash"
    gh.add_comment(REPO, 1, f"the-loop allow {asked['prompt']['id']}", author="alice")
    wait_until(lambda: tool_results(api, "toolu_p"), 60, what="the probe's result")
    found = (workspace(daemon) / "probe.txt").read_text().split()
    results = dict(line.split(":", 1) for line in found)
    assert results == {
        "database": "DENIED",
        "config": "DENIED",
        "environ": "DENIED",
        "tmux": "DENIED",
        "other-tree": "DENIED",
        "loopback": "DENIED",
        "outside": "DENIED",
        "root": "DENIED",
    }, results
    wait_state(daemon, "waiting", signal="claude-hook:Stop")
    refused = daemon.api("GET", "/events", params={"type": "sandbox.egress_refused"}).json()
    assert "example.org:80" in [e["payload"]["host"] for e in refused]  # via the proxy: logged

    session = daemon.api("GET", f"/sessions/{quote(REF, safe=':/')}").json()
    conversation = daemon.api("GET", f"/sessions/{session['id']}/conversation")
    assert conversation.status_code == 200, conversation.text
    assert "DONE-AFTER-TOOL" in conversation.text  # the transcript in the agent's own home
    assert attention_of(daemon)["state"] == "waiting"
    assert not comments(gh, "ghp_")
