"""The real Codex CLI under the daemon, against the fake Responses API: its turn-complete
``notify`` program (``the-loop hook codex-notify``) reports over the hook channel ``waiting``
with the agent's last message (nothing refused); the notify of the thread Codex titles the
conversation in is not taken for a turn of the agent's; a delivered follow-up is ``working``
until the next notify; explain names the signal."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.daemon import Daemon, served
from tests.fakes import payloads as P
from tests.fakes.fake_openai import FakeOpenAI, ResponsesRequest
from tests.harness.agent_clis import REPO
from tests.helpers import wait_until
from tests.work import Work
from the_loop.store import open_database

CODEX_BIN = REPO / "node_modules" / ".bin" / "codex"
pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
REF = "github:octo/repo#31"
NOTIFY = "codex-notify:agent-turn-complete"


LATER = threading.Event()
"""Let go by the test: the follow-up's turn is at work until then (held once it was seen
``working``: a turn that ended before the delivery was recorded rightly never reads so)."""


def reply(request: ResponsesRequest) -> str:
    if request.is_conversation and "planets" in (request.prompt or ""):
        LATER.wait(60)
    kind = "REPLY" if request.is_conversation else "TITLE"  # Codex titles it in a thread aside
    return f"FAKE-CODEX-{kind}-{request.seq}"


@pytest.fixture
def daemon(work: Work) -> Iterator[tuple[Daemon, FakeOpenAI]]:
    assert CODEX_BIN.exists(), f"the pinned Codex CLI is missing at {CODEX_BIN} (make setup)"
    LATER.clear()
    with FakeOpenAI(reply=reply) as api:
        env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
        work.env.write_config(
            harnesses={"codex": {"binary": str(CODEX_BIN), "env": env}},
            routing={"defaultHarness": "codex", "authorizedUsers": ["alice"]},
            tmux={"resumeProbeSeconds": 0.5},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
            github={"enabled": True},
        )
        with served(work) as d:
            yield d, api


def explain(work: Work) -> dict[str, Any]:
    result = work.env.run("attention", "explain", REF, "--format", "json")
    return json.loads(result.stdout) if result.exit_code == 0 else {}  # type: ignore[no-any-return]


def test_codex_notify_reports_finished_turns_and_delivery_starts_one(
    work: Work, daemon: tuple[Daemon, FakeOpenAI]
) -> None:
    d, api = daemon
    body = P.issue_comment_event("the-loop do count the stars", number=31)
    assert d.post("issue_comment", body, "cxn-1").status_code == 202

    first = wait_until(
        lambda: (e := explain(work)).get("signal") == NOTIFY and e, 120, what="first notify"
    )
    assert first["state"] == "waiting" and first["rule"] == "the turn finished"
    assert first["lastMessage"].startswith("FAKE-CODEX-REPLY-"), first
    # Codex reports the end of the title's thread as a turn too, the title its last message
    wait_until(lambda: _reports(work, first["agent"]) >= 2, 60, what="the title thread's notify")
    assert explain(work)["lastMessage"] == first["lastMessage"]
    turns = len(api.conversation_turns())

    follow = P.issue_comment_event("also the planets", number=31)
    assert d.post("issue_comment", follow, "cxn-2").status_code == 202
    wait_until(lambda: ("working", "delivery") in changes(d), 90, what="the delivery read working")
    LATER.set()  # its turn ends now
    wait_until(lambda: len(api.conversation_turns()) > turns, 90, what="the second turn")
    second = wait_until(
        lambda: (
            (e := explain(work)).get("signal") == NOTIFY
            and e["lastMessage"] != first["lastMessage"]
            and e
        ),
        90,
        what="the second notify",
    )
    assert second["state"] == "waiting"

    seen = changes(d)
    working = seen.index(("working", "delivery"))
    assert ("waiting", NOTIFY) in seen[working:], seen
    assert d.api("GET", "/events", params={"type": "hook.refused"}).json() == []


def changes(d: Daemon) -> list[tuple[str, str]]:
    """Each change of the agent's attention, oldest first: the state it went to, its signal."""
    found = d.api("GET", "/events", params={"type": "session.attention_changed", "limit": 100})
    return [(e["payload"]["to"], e["payload"]["signal"]) for e in reversed(found.json())]


def _reports(work: Work, agent: str) -> int:
    """How many hook-channel reports of AGENT the daemon has taken (applied or set aside)."""
    db = open_database(work.env.state_dir, work.env.database_url)
    try:
        found = db.connect().execute("SELECT COUNT(*) FROM hook_reports WHERE agent = ?", (agent,))
        return int(found.fetchone()[0])
    finally:
        db.close()
