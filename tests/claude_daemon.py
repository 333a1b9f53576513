"""A daemon driving the real Claude Code CLI against the fake Messages API, polling the fake
GitHub for one labelled issue: the set-up the end-to-end attention and spend tests share."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic, Reply
from tests.fakes.fake_github import FakeGitHub
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

REPO = "octo/repo"


def start_claude_daemon(
    work: Work,
    loop_env: Env,
    gh: FakeGitHub,
    api: FakeAnthropic,
    authorized: list[str],
    model: str | None = None,
    logged_in: bool = True,
    **sections: Any,
) -> Daemon:
    """Configure Claude Code (its default launch: it asks before tools) as the default
    harness, the poller on issue 1 of REPO, and SECTIONS; start the daemon and wait for its
    first poll. LOGGED_IN false leaves Claude Code without a key."""
    gh.create_repo(REPO)
    gh.add_issue(REPO, "Flaky", "the scheduler test fails", labels=["the-loop"])
    home = loop_env.root / "home"
    claude_env = {**api.claude_env(loop_env.root / "claude-config"), "HOME": str(home)}
    if not logged_in:  # no key and no login: Claude Code says "Not logged in"
        del claude_env["ANTHROPIC_API_KEY"]
    harness: dict[str, Any] = {
        "binary": str(CLAUDE_BIN),
        "env": claude_env,
    }
    if model is not None:
        harness["model"] = model
    loop_env.write_config(
        harnesses={"claude": harness},
        routing={"defaultHarness": "claude", "authorizedUsers": authorized},
        github={
            "enabled": True,
            "apiUrl": gh.api_url,
            "tokenEnv": "FAKE_GH_TOKEN",
            "repos": [REPO],
            "timeoutSeconds": 2,
            "retries": 1,
            "poller": {"enabled": True, "intervalSeconds": 1},
        },
        **sections,
    )
    daemon = Daemon(work)
    daemon.start(FAKE_GH_TOKEN=gh.token)
    wait_until(
        lambda: daemon.api("GET", "/events", params={"type": "poll.cycle"}).json(),
        20,
        what="the first poll",
    )
    return daemon


@contextmanager
def claude_item(
    work: Work,
    loop_env: Env,
    reply: Reply,
    authorized: list[str],
    first: str | None = "the-loop do say hello",
    **options: Any,
) -> Iterator[tuple[Daemon, FakeGitHub, FakeAnthropic]]:
    """The fake GitHub and the fake Messages API answering with REPLY, a daemon on them
    (``start_claude_daemon`` with OPTIONS), and FIRST commented on the issue by alice; the
    daemon is stopped on the way out."""
    with FakeGitHub() as gh, FakeAnthropic(reply=reply) as api:
        daemon = start_claude_daemon(work, loop_env, gh, api, authorized, **options)
        if first is not None:
            gh.add_comment(REPO, 1, first, author="alice")
        try:
            yield daemon, gh, api
        finally:
            daemon.stop()
