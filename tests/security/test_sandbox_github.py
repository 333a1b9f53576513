"""Brokered GitHub credentials (SPEC §18) with real bubblewrap, real git, the real daemon, a
fake Git host (``git http-backend``) and the fake GitHub API on loopback. A work item's agent
(a shell script as its ``command`` harness) pushes, fetches and comments:

- confined (``sandbox.github: write``): its push of the item's branch arrives carrying the
  brokered token, a push of another branch or repository is refused, its comment arrives with
  the self-marker and is not routed as the operator's ``the-loop stop``; the token is nowhere in
  its environment, home or ``/proc``, and without it nothing reaches GitHub directly;
- ``sandbox.github: none``: nothing is brokered;
- ``sandbox.mode: none``: the agent holds the token and posts an unmarked ``the-loop stop``,
  which the-loop takes as its operator's.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon
from tests.fakes.fake_git_host import FakeGitHost
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import wait_until
from tests.work import Work
from the_loop.refs import WorkItemRef, branch_name
from the_loop.work import SELF_MARKER

pytestmark = pytest.mark.bwrap

REPO = "octo/repo"
BRANCH = branch_name(WorkItemRef(owner="octo", repo="repo", number=1, host="127.0.0.1"))
PROBE = r"""
echo probe up
export GIT_TERMINAL_PROMPT=0 GIT_ASKPASS=/bin/false
check() {
  echo "== $1" >> '{out}/log'
  if eval "$2" >>'{out}/log' 2>&1; then echo "$1:OPEN"; else echo "$1:DENIED"; fi
}
basic() { printf 'x-access-token:%s' "$FAKE_GH_TOKEN" | base64 -w0; }
while [ ! -e '{out}/go' ]; do sleep 0.1; done
{
git -c user.name=probe -c user.email=probe@example.org commit -q --allow-empty -m agent-work
git rev-parse HEAD > '{out}/commit'
git rev-parse --abbrev-ref HEAD > '{out}/branch'
check push-own "git push origin HEAD"
check push-main "git push origin HEAD:refs/heads/main"
check push-other-repo "git push '{githost}/octo/other.git' HEAD:refs/heads/agent"
check push-other-repo-broker \
  "git push \"$THE_LOOP_GIT_BROKER/octo/other.git\" HEAD:refs/heads/agent"
check push-other-with-token "git -c http.extraHeader=\"Authorization: Basic $(basic)\" \
  push '{githost}/octo/other.git' HEAD:refs/heads/agent"
check fetch "git fetch -q origin main"
check token-env "env | grep -qF -f '{tools}/token'"
check token-files \
  "grep -rqsF -f '{tools}/token' \"$HOME\" /proc/[0-9]*/environ /proc/[0-9]*/cmdline"
check comment-broker "'{python}' '{post}' broker 1 'the-loop stop'"
check comment-broker-other-item "'{python}' '{post}' broker 2 'hello'"
check comment-direct "'{python}' '{post}' direct 1 'the-loop stop'"
} > '{out}/probe.out' 2>&1
mv '{out}/probe.out' '{out}/probe.txt'
exec sleep 600
"""
POST = """
import json, os, sys, urllib.request
how, number, text = sys.argv[1:4]
if how == "broker":
    base, auth = os.environ["THE_LOOP_GITHUB_API"], {}
else:
    base, auth = "{api}", {"Authorization": "Bearer " + os.environ.get("FAKE_GH_TOKEN", "")}
request = urllib.request.Request(
    f"{base}/repos/octo/repo/issues/{number}/comments",
    data=json.dumps({"body": text}).encode(),
    headers={**auth, "Content-Type": "application/json"},
    method="POST",
)
urllib.request.urlopen(request, timeout=10)
"""


@pytest.fixture
def hosts(work: Work) -> Iterator[tuple[FakeGitHub, FakeGitHost]]:
    """The fake GitHub API (its token is the operator's: what it posts is alice's) and the
    fake Git host, with octo/repo (issue 1 the agent's, issue 2 not) and octo/other."""
    gh = FakeGitHub(login="alice")
    with gh, FakeGitHost(work.env.root / "git", {gh.token}) as git:
        gh.create_repo(REPO)
        gh.add_issue(REPO, "Flaky", "fix it", labels=["the-loop"])
        gh.add_issue(REPO, "Other", "not the agent's", labels=[])
        for name in (REPO, "octo/other"):
            git.create_repo(name, {"README": "hello\n"})
        yield gh, git


@pytest.fixture
def daemon(work: Work, hosts: tuple[FakeGitHub, FakeGitHost]) -> Iterator[Daemon]:
    """The daemon (not started): stopped before the fakes go."""
    running = Daemon(work)
    yield running
    running.stop()


def probe(
    work: Work, daemon: Daemon, hosts: tuple[FakeGitHub, FakeGitHost], mode: str, github: str
) -> dict[str, Any]:
    """Run the probe as the agent of octo/repo#1 with sandbox MODE and GITHUB; its results,
    and what the fakes saw."""
    env, (gh, git) = work.env, hosts
    tools, out = env.root / "tools", env.root / "out"
    for path in (tools, out):
        path.mkdir()
    (tools / "token").write_text(gh.token + "\n")  # a pattern: never in the probe's argv
    (tools / "post.py").write_text(POST.replace("{api}", gh.api_url))
    script = tools / "probe.sh"
    script.write_text(
        PROBE.replace("{out}", str(out))
        .replace("{githost}", git.url)
        .replace("{tools}", str(tools))
        .replace("{python}", sys.executable)
        .replace("{post}", str(tools / "post.py"))
    )
    env.write_config(
        harnesses={"probe": {"adapter": "command", "interactive": ["sh", str(script)]}},
        routing={"defaultHarness": "probe", "authorizedUsers": ["alice"]},
        github={
            "enabled": True,
            "apiUrl": gh.api_url,
            "tokenEnv": "FAKE_GH_TOKEN",
            "repos": [REPO],
            "poller": {"enabled": True, "intervalSeconds": 1},
            "reactions": False,
            "announce": False,
        },
        workspaces={"enabled": True, "cloneUrl": f"{git.url}/{{owner}}/{{repo}}.git"},
        sandbox={
            "mode": mode,
            "network": "allowlist",
            "github": github,
            "allowHosts": [gh.api_url.removeprefix("http://"), git.url.removeprefix("http://")],
            "readOnlyPaths": [str(tools)],
            "writablePaths": [str(out)],
        },
    )
    daemon.start(FAKE_GH_TOKEN=gh.token)
    gh.add_comment(REPO, 1, "the-loop do the work", author="alice")
    wait_until(lambda: events(daemon, "session.spawned"), 60, what="the agent's spawn")
    gh.advance(5)  # the poller sees what the agent posts (the fake's clock has whole seconds)
    (out / "go").touch()
    found = out / "probe.txt"
    wait_until(found.exists, 90, what="the probe's results")
    lines = found.read_text().split()
    results: dict[str, Any] = dict(line.split(":", 1) for line in lines if ":" in line)
    results["commit"] = (out / "commit").read_text().strip()
    results["branch"] = (out / "branch").read_text().strip()
    results["branches"] = git.branches(REPO)
    results["pushes"] = [r for r in git.requests() if "receive-pack" in r.path]
    results["comments"] = [c["body"] for c in gh.comments(REPO, 1)]
    results["other-comments"] = [c["body"] for c in gh.comments(REPO, 2)]
    results["log"] = (out / "log").read_text(errors="replace")  # what each check printed
    return results


def events(daemon: Daemon, kind: str) -> list[dict[str, Any]]:
    found = daemon.api("GET", "/events", params={"type": kind, "limit": 500})
    return list(found.json())


def ignored_as_marked(daemon: Daemon) -> list[dict[str, Any]]:
    return [e for e in events(daemon, "route.ignored") if "self-marker" in str(e["payload"])]


def test_a_confined_agent_pushes_its_branch_and_comments_through_the_broker(
    work: Work, daemon: Daemon, hosts: tuple[FakeGitHub, FakeGitHost]
) -> None:
    results = probe(work, daemon, hosts, "bwrap", "write")
    gh = hosts[0]
    assert {k: results[k] for k in results if k.startswith(("push-", "fetch", "token"))} == {
        "push-own": "OPEN",
        "push-main": "DENIED",
        "push-other-repo": "DENIED",
        "push-other-repo-broker": "DENIED",
        "push-other-with-token": "DENIED",
        "fetch": "OPEN",
        "token-env": "DENIED",
        "token-files": "DENIED",
    }, (results["log"], events(daemon, "sandbox.*"))  # what each check printed, and why
    assert results["branch"] == BRANCH  # the item's branch (its ref names the fake's host)
    assert results["branches"].get(BRANCH) == results["commit"], results["branches"]
    assert "agent" not in results["branches"]
    pushed = [r for r in results["pushes"] if r.method == "POST" and r.status == 200]
    assert [r.token for r in pushed] == [gh.token], results["pushes"]  # brokered, once

    assert results["comment-broker"] == "OPEN", results
    assert results["comment-broker-other-item"] == "DENIED", results
    assert results["comment-direct"] == "DENIED", results  # no token: 401
    assert results["comments"][-1] == f"the-loop stop\n\n{SELF_MARKER}", results["comments"]
    assert results["other-comments"] == []
    wait_until(lambda: ignored_as_marked(daemon), 60, what="the marked comment ignored")
    assert not events(daemon, "session.autoclosed"), "the agent's comment stopped its session"

    refused = events(daemon, "sandbox.credential_refused")
    reasons = " | ".join(e["payload"]["reason"] for e in refused)
    assert "refs/heads/main" in reasons, reasons
    assert "not the item's repository" in reasons, reasons
    assert "only a comment on the item" in reasons or "/issues/2/comments" in reasons, reasons
    assert gh.token not in str(refused)


def test_with_github_none_nothing_is_brokered(
    work: Work, daemon: Daemon, hosts: tuple[FakeGitHub, FakeGitHost]
) -> None:
    results = probe(work, daemon, hosts, "bwrap", "none")
    assert results["push-own"] == "DENIED", results
    assert results["fetch"] == "DENIED", results
    assert results["comment-broker"] == "DENIED", results
    assert list(results["branches"]) == ["main"], results["branches"]
    refused = events(daemon, "sandbox.credential_refused")
    assert {e["payload"]["reason"] for e in refused} == {"sandbox.github is none"}, refused


def test_unconfined_the_agent_holds_the_token_and_posts_as_the_operator(
    work: Work, daemon: Daemon, hosts: tuple[FakeGitHub, FakeGitHost]
) -> None:
    results = probe(work, daemon, hosts, "none", "write")
    assert results["token-env"] == "OPEN", results
    assert results["push-other-with-token"] == "OPEN", results
    assert results["comment-direct"] == "OPEN", results
    assert "the-loop stop" in results["comments"], results["comments"]  # no marker
    assert results["token-files"] == "OPEN", results
    stopped = wait_until(lambda: events(daemon, "session.autoclosed"), 60, what="a stop")
    assert stopped[0]["payload"]["reason"] == "stopped"  # the agent's words, as alice's command
