"""A moved Claude Code session resumes its conversation: two real daemons on one real
PostgreSQL, each with its own Claude Code config directory (as two hosts have), the real CLI
against the fake Messages API. The node running the agent is SIGKILLed (its tmux server with
it, as when its host dies); once it is declared dead, the next comment respawns the agent on
the other node from the transcript the store kept, and the request after the move carries
the earlier conversation. Meanwhile the session reads ``blocked`` (its node stopped
answering), and the agent left on the dead node no longer speaks for it."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.attention.hooks import hook_env, run_hook
from tests.cluster import DEAD_AFTER, Node, cluster_db, declared_dead
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.reliability.conftest import NodeConfig
from tests.work import Work
from the_loop import events as ev
from the_loop.hook import AGENT_ENV, TOKEN_ENV
from the_loop.store import Database, attention, outbox, transcripts
from the_loop.store import sessions as session_store

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(400),
]
FIRST, AFTER = "tok-1-0-end", "tok-1-1-end"


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def node_config(api: FakeAnthropic) -> NodeConfig:
    """Claude Code as each node's harness, its config directory and home the node's own."""

    def config(name: str, work: Work) -> dict[str, Any]:
        root = work.env.root
        env = {**api.claude_env(root / f"claude-{name}"), "HOME": str(root / "home")}
        return {
            "harnesses": {"claude": {"binary": str(CLAUDE_BIN), "env": env}},
            "routing": {"defaultHarness": "claude"},
            "tmux": {"resumeProbeSeconds": 3},
        }

    return config


def _asked(api: FakeAnthropic, token: str) -> Any:
    found = [r for r in api.conversation_requests() if token in "\n".join(r.user_texts())]
    return found[0] if found else None


def _diag(db: Database, conversation: str) -> str:
    """What the hooks reported (for a failing wait)."""
    rows = [(r.agent, r.state, r.signal) for r in attention.rows(db.connect())]
    return f"(attention {rows}, kept {transcripts.get(db.connect(), conversation)})"


def _token_of(agent: str) -> str:
    """The hook token in the environment of AGENT's running Claude Code."""
    for proc in Path("/proc").iterdir():
        try:
            env = dict(
                line.split("=", 1)
                for line in (proc / "environ").read_text().split("\0")
                if "=" in line
            )
        except OSError:
            continue
        if env.get(AGENT_ENV) == agent and TOKEN_ENV in env:
            return env[TOKEN_ENV]
    raise AssertionError(f"no process of agent {agent} holds a hook token")


def _events(db: Database, kind: str) -> list[ev.Event]:
    return ev.query(db, ev.EventFilter(types=(kind,), limit=None))


def test_a_moved_claude_session_resumes_its_conversation_on_the_other_node(
    cluster: list[Node], api: FakeAnthropic
) -> None:
    db = cluster_db(cluster)
    assert cluster[1].post(1, 0) == 202
    wait_until(lambda: _asked(api, FIRST), 120, interval=0.2, what="the first comment's turn")
    rec = wait_until(
        lambda: next(iter(session_store.list_sessions(db.connect())), None), 30, what="a session"
    )
    conversation = rec.harness_session_id
    assert conversation
    # the Stop hook kept the finished turn in the store
    try:
        wait_until(
            lambda: b"FAKE-REPLY" in (transcripts.load(db.connect(), conversation) or b""),
            60,
            interval=0.2,
            what="the first turn in the store",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc} {_diag(db, conversation)}") from None
    victim = next(n for n in cluster if n.name == rec.node)
    live = next(n for n in cluster if n is not victim)
    left_behind = _token_of(rec.id)  # what the agent on the victim reports with
    victim.daemon.stop(signal.SIGKILL)
    subprocess.run(["tmux", "-L", victim.work.env.socket, "kill-server"], capture_output=True)
    wait_until(
        lambda: declared_dead(db, victim.name),
        DEAD_AFTER * 6,
        interval=0.2,
        what="node.dead",
    )
    # the declaration tells that its agent is gone, not the waiting its node last recorded
    gone = attention.get(db.connect(), rec.id)
    assert gone is not None and gone.state == attention.BLOCKED, gone and gone.state
    assert gone.rule == f"its node {victim.name} stopped answering", gone.rule

    assert live.post(1, 1) == 202
    after = wait_until(lambda: _asked(api, AFTER), 120, interval=0.2, what="the turn after")
    texts = "\n".join(after.user_texts())
    assert FIRST in texts, texts  # the earlier conversation came along
    moved = session_store.get(db.connect(), rec.id)
    assert moved is not None and moved.node == live.name
    assert moved.harness_session_id == conversation
    restored = _events(db, "session.transcript_restored")
    assert [e.payload["conversation"] for e in restored] == [conversation]
    assert restored[0].payload["path"].endswith(f"/{conversation}.jsonl")
    assert live.work.env.root.as_posix() in restored[0].payload["path"]
    assert [e.payload["resumed"] for e in _events(db, "session.respawned")] == [True]
    assert not _events(db, "session.resume_failed")
    assert not _events(db, "session.vanished")  # moved, not lost on the node that took it
    # the new node's hook goes on appending to the same kept transcript
    wait_until(
        lambda: AFTER.encode() in (transcripts.load(db.connect(), conversation) or b""),
        60,
        interval=0.2,
        what="the turn after the move in the store",
    )
    # the agent left on the dead node speaks for the session no more: a report it spooled
    # there (applied when that node comes back, or sent to any node) is refused
    stale = run_hook(
        hook_env(live.work.env, left_behind, rec.id), {"hook_event_name": "SessionEnd"}
    )
    assert "refused: unknown token" in stale.stderr, stale.stderr
    state = attention.get(db.connect(), rec.id)
    assert state is not None and state.state == attention.WAITING, state and state.state
    notices = [i for i in outbox.list_items(db) if "moved the agent" in i.model_dump_json()]
    assert len(notices) == 1, notices
    body = notices[0].model_dump_json()
    assert (
        "resumed from the transcript the-loop keeps" in body
        and f"`{victim.name}`" in body
        and "uncommitted" in body
    )
