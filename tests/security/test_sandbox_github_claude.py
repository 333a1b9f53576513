"""The real Claude Code, confined, pushes its item's branch and comments through the daemon's
GitHub broker (SPEC §18): a Bash tool use, allowed by an authorized ``the-loop allow``, commits,
pushes (arriving at the fake Git host with the brokered token), posts a comment (arriving at
the fake GitHub with the self-marker) and finds the token nowhere it can read."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.attention.test_claude_attention import REPO, tool_results, wait_state, workspace
from tests.claude_daemon import claude_item
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.fakes.fake_git_host import FakeGitHost
from tests.fakes.fake_github import DEFAULT_TOKEN, FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.refs import WorkItemRef, branch_name
from the_loop.work import SELF_MARKER

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.bwrap,
]
BRANCH = branch_name(WorkItemRef(owner="octo", repo="repo", number=1, host="127.0.0.1"))
SCRIPT = r"""
git -c user.name=claude -c user.email=claude@example.org commit -q --allow-empty -m from-claude
git rev-parse HEAD > commit.txt
if git push -q origin HEAD; then echo push:OPEN; else echo push:DENIED; fi > probe.txt
if /usr/bin/python3 -c '
import json, os, urllib.request
url = os.environ["THE_LOOP_GITHUB_API"] + "/repos/octo/repo/issues/1/comments"
body = json.dumps({"body": "CLAUDE-SAYS done"}).encode()
urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=10)
'; then echo comment:OPEN; else echo comment:DENIED; fi >> probe.txt
if grep -rqsF -f '{tools}/token' "$HOME" /proc/[0-9]*/environ /proc/[0-9]*/cmdline; then
  echo token:OPEN; else echo token:DENIED; fi >> probe.txt
echo probed
"""
COMMAND: dict[str, str] = {}


def reply(request: RecordedRequest) -> str | ToolUse:
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return f"DONE-AFTER-TOOL-{request.seq}"
    if "PUSH-IT" in (request.prompt or ""):
        return ToolUse("Bash", {"command": COMMAND["command"], "description": "push"}, "toolu_g")
    return f"FAKE-REPLY-{request.seq}"


@pytest.fixture
def setup(
    work: Work, loop_env: Env
) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic, FakeGitHost]]:
    tools = loop_env.root / "tools"
    tools.mkdir()
    (tools / "token").write_text(DEFAULT_TOKEN + "\n")
    script = tools / "push.sh"
    script.write_text(SCRIPT.replace("{tools}", str(tools)))
    COMMAND["command"] = f"sh {script}"
    with FakeGitHost(loop_env.root / "git", {DEFAULT_TOKEN}) as git:
        git.create_repo(REPO, {"README": "hello\n"})
        with claude_item(
            work,
            loop_env,
            reply,
            ["alice"],
            attention={"notifyAfterSeconds": 30, "pollSeconds": 0.1},
            workspaces={"enabled": True, "cloneUrl": f"{git.url}/{{owner}}/{{repo}}.git"},
            sandbox={"mode": "bwrap", "network": "allowlist", "readOnlyPaths": [str(tools)]},
        ) as (daemon, gh, api):
            yield daemon, gh, api, git


def test_confined_claude_pushes_and_comments_through_the_broker(
    setup: tuple[Daemon, FakeGitHub, FakeAnthropic, FakeGitHost],
) -> None:
    daemon, gh, api, git = setup
    wait_state(daemon, "waiting", 120, "claude-hook:Stop")
    gh.add_comment(REPO, 1, "please PUSH-IT now", author="alice")
    asked = wait_state(daemon, "needs-permission")
    assert asked["prompt"]["tool"] == "Bash"
    gh.add_comment(REPO, 1, f"the-loop allow {asked['prompt']['id']}", author="alice")
    wait_until(lambda: tool_results(api, "toolu_g"), 90, what="the push's result")
    tree: Path = workspace(daemon)
    results = dict(line.split(":", 1) for line in (tree / "probe.txt").read_text().split())
    assert results == {"push": "OPEN", "comment": "OPEN", "token": "DENIED"}, results
    commit = (tree / "commit.txt").read_text().strip()
    assert git.branches(REPO).get(BRANCH) == commit
    pushed = [r for r in git.requests() if r.method == "POST" and "receive-pack" in r.path]
    assert [r.token for r in pushed] == [gh.token]
    bodies = [c["body"] for c in gh.comments(REPO, 1)]
    assert f"CLAUDE-SAYS done\n\n{SELF_MARKER}" in bodies, bodies
