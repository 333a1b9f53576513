"""Fixtures for the Slack tests: the fake Slack Web API, a daemon pointed at it, and signed
Events API / interaction requests sent to the daemon over HTTP."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes.fake_github import FakeGitHub
from tests.fakes.fake_slack import FakeSlack, Message
from tests.helpers import wait_until
from tests.outbox.conftest import REPO, github_section
from tests.work import Work
from the_loop.slack.signature import sign

SIGNING = "slack-signing-secret-for-tests"
CHANNEL = "C0LOOPTEST"
ALICE = "U0ALICE001"
MALLORY = "U0MALLORY1"
STANDING = "ops"


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.create_repo(REPO)
        yield fake


def slack_section(fake: FakeSlack, **extra: Any) -> dict[str, Any]:
    return {
        "enabled": True,
        "apiUrl": fake.api_url,
        "channel": CHANNEL,
        "authorizedUsers": [ALICE],
        "timeoutSeconds": 5,
        **extra,
    }


def standing_section(harness: str | None = None, **slack: Any) -> dict[str, Any]:
    """The standing session ``ops`` (on HARNESS, else the default one) announced in Slack."""
    session = {"name": STANDING, "prompt": "watch the queue", "slack": {"enabled": True, **slack}}
    return {"enabled": True, "sessions": [{**session, **({"harness": harness} if harness else {})}]}


@dataclass
class Slack:
    """A daemon with Slack on, and the fake Slack it posts to."""

    daemon: Daemon
    fake: FakeSlack

    @property
    def work(self) -> Work:
        return self.daemon.work

    def signed(
        self,
        path: str,
        body: bytes,
        content_type: str,
        *,
        secret: str = SIGNING,
        timestamp: int | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        sent = {
            "Content-Type": content_type,
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": sign(secret.encode(), stamp, body),
            **(headers or {}),
        }
        return httpx.post(f"{self.daemon.url}{path}", content=body, headers=sent, timeout=30)

    def event(
        self, event: dict[str, Any], event_id: str | None = None, **kw: Any
    ) -> httpx.Response:
        body = {
            "token": "unused",
            "team_id": "T0TEAM",
            "type": "event_callback",
            "event_id": event_id or f"Ev{uuid.uuid4().hex[:12]}",
            "event_time": int(time.time()),
            "event": event,
        }
        return self.signed("/webhooks/slack", json.dumps(body).encode(), "application/json", **kw)

    def reply(
        self, text: str, thread_ts: str, user: str = ALICE, event_id: str | None = None, **kw: Any
    ) -> httpx.Response:
        event = {
            "type": "message",
            "channel": CHANNEL,
            "user": user,
            "text": text,
            "ts": f"{time.time():.6f}",
            "thread_ts": thread_ts,
            **kw.pop("fields", {}),
        }
        return self.event(event, event_id, **kw)

    def press(
        self,
        prompt_id: str,
        message_ts: str,
        allow: bool = True,
        user: str = ALICE,
        choice: int | str | None = None,
        channel: str = CHANNEL,
    ) -> httpx.Response:
        """A press of Allow (ALLOW) or Deny, or of a question's CHOICE, on PROMPT_ID's
        message (in CHANNEL)."""
        if choice is not None:
            action, value = "the_loop_answer", f"{prompt_id}.{choice}"
        else:
            action, value = ("the_loop_allow" if allow else "the_loop_deny"), prompt_id
        payload = {
            "type": "block_actions",
            "trigger_id": uuid.uuid4().hex,
            "user": {"id": user},
            "channel": {"id": channel},
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel},
            "actions": [{"action_id": action, "value": value, "type": "button"}],
        }
        body = urlencode({"payload": json.dumps(payload)}).encode()
        return self.signed(
            "/webhooks/slack/interactions", body, "application/x-www-form-urlencoded"
        )

    def prompt_message(self, thread: str, prompt_id: str, timeout: float = 30) -> Message:
        """The message of PROMPT_ID in THREAD, with its blocks (waited for)."""

        def found() -> Message | None:
            hits = [m for m in self.fake.thread(CHANNEL, thread) if prompt_id in m.text]
            return hits[0] if hits and hits[0].blocks else None

        message = wait_until(found, timeout=timeout, what=f"prompt {prompt_id} in the thread")
        assert isinstance(message, Message)
        return message

    def announcement(self, contains: str, timeout: float = 30) -> Message:
        """The one top-level post in the channel containing CONTAINS (waited for)."""

        def found() -> Message | None:
            posts = [m for m in self.fake.posts(CHANNEL) if m.thread_ts is None]
            hits = [m for m in posts if contains in m.text]
            return hits[0] if hits else None

        message = wait_until(found, timeout=timeout, what=f"an announcement with {contains!r}")
        assert isinstance(message, Message)
        return message

    def dropped(self, reason: str, timeout: float = 30) -> dict[str, Any]:
        def found() -> dict[str, Any] | None:
            hits = [
                e for e in self.work.events("slack.dropped") if e["payload"]["reason"] == reason
            ]
            return hits[-1] if hits else None

        event = wait_until(found, timeout=timeout, what=f"slack.dropped {reason}")
        assert isinstance(event, dict)
        return event

    def standing_conversation(self) -> str:
        rows = json.loads(self.work.cli("standing", "list", "--format", "json").stdout)
        conversation = {r["name"]: r for r in rows}[STANDING]["conversationId"]
        assert isinstance(conversation, str)
        return conversation


def start(work: Work, fake: FakeSlack, gh: FakeGitHub | None = None, **extra: str) -> Daemon:
    daemon = Daemon(work)
    env = {"SLACK_SIGNING_SECRET": SIGNING, "SLACK_BOT_TOKEN": fake.token, **extra}
    if gh is not None:
        env["FAKE_GH_TOKEN"] = gh.token
    daemon.start(**env)
    return daemon


@contextmanager
def standing_served(
    work: Work, fake: FakeSlack, harness: str | None = None, **sections: Any
) -> Iterator[Slack]:
    """A daemon with the standing session ``ops`` (on HARNESS) announced in Slack (SECTIONS:
    more of the config; a ``slack`` section is merged into the fake's); the daemon (the one
    the test left running, if it restarted it) and the session stopped after."""
    slack_config = slack_section(fake, **sections.pop("slack", {}))
    work.configure(slack=slack_config, standing=standing_section(harness), **sections)
    slack = Slack(start(work, fake), fake)
    try:
        yield slack
    finally:
        slack.daemon.stop()
        work.cli("standing", "stop")


@pytest.fixture
def standing_slack(work: Work, fake_slack: FakeSlack) -> Iterator[Slack]:
    """A daemon with the standing session ``ops`` announced in Slack."""
    with standing_served(work, fake_slack) as slack:
        yield slack


def github_for_slack(gh: FakeGitHub, **extra: Any) -> dict[str, Any]:
    return github_section(gh, timeoutSeconds=10, **extra)
