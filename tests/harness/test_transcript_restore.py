"""A resume puts a kept transcript back where Claude Code reads it: under the config dir the
harness uses and the slug of the NEW working directory; a file already there is left alone;
nothing kept (or over its cap) writes nothing; the moved session's ticket is told which.
Real store on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import BACKENDS, Env
from the_loop import events as ev
from the_loop.agent import Agent, AgentKind
from the_loop.agent.spend.transcripts import keep, restore
from the_loop.cluster.placement import move_notice
from the_loop.config import HarnessConfig
from the_loop.context import Ctx, open_ctx
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.harness.claude import project_slug
from the_loop.store import transcripts as store

CONV = "5d1e4c7a-3b2f-4e6a-9c8d-7f6e5d4c3b2a"


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ctx(loop_env: Env) -> Iterator[Ctx]:
    c = open_ctx(loop_env.config_path)
    yield c
    c.db.close()


def _keep(ctx: Ctx, data: bytes, cap: int = store.MAX_BYTES) -> None:
    with ctx.db.transaction() as tx:
        store.append(tx, CONV, "s-1", 0, data, now=1.0, cap=cap)


def _resume(ctx: Ctx, cwd: Path, config_dir: Path) -> tuple[Path | None, Path]:
    adapter = build_adapter("claude", HarnessConfig(env={"CLAUDE_CONFIG_DIR": str(config_dir)}))
    launch = adapter.resume_interactive(LaunchSpec(cwd=cwd, session_id=CONV))
    agent = Agent("s-1", AgentKind.WORK_ITEM, "claude", "tmux", cwd, label="github:o/r#7")
    expected = config_dir / "projects" / project_slug(cwd) / f"{CONV}.jsonl"
    return restore(ctx, agent, adapter, launch), expected


def test_the_slug_is_the_path_with_every_other_character_a_dash() -> None:
    assert project_slug(Path("/w/github_octo.repo#15")) == "-w-github-octo-repo-15"
    assert project_slug(Path("/a b/ü")) == "-a-b--"


def test_a_kept_transcript_is_written_under_the_new_cwd(ctx: Ctx, tmp_path: Path) -> None:
    line = json.dumps({"cwd": "/old/node/worktree", "message": {"content": "count the stars"}})
    data = (line + "\n").encode()
    _keep(ctx, data)
    cwd = tmp_path / "ws" / "github_o.r#7"
    cwd.mkdir(parents=True)
    written, expected = _resume(ctx, cwd, tmp_path / "claude")
    assert written == expected and expected.read_bytes() == data
    assert expected.stat().st_mode & 0o777 == 0o600
    found = ev.query(ctx.db, ev.EventFilter(types=("session.transcript_restored",)))
    assert [e.payload["bytes"] for e in found] == [len(data)]
    assert found[0].work_item == "github:o/r#7" and found[0].session_id == "s-1"


def test_a_file_already_there_is_left_alone(ctx: Ctx, tmp_path: Path) -> None:
    _keep(ctx, b'{"n": 1}\n')
    cwd = tmp_path / "ws"
    cwd.mkdir()
    expected = tmp_path / "claude" / "projects" / project_slug(cwd) / f"{CONV}.jsonl"
    expected.parent.mkdir(parents=True)
    expected.write_bytes(b'{"local": true}\n')
    assert _resume(ctx, cwd, tmp_path / "claude")[0] is None
    assert expected.read_bytes() == b'{"local": true}\n'


def test_nothing_kept_or_over_its_cap_writes_nothing(ctx: Ctx, tmp_path: Path) -> None:
    cwd = tmp_path / "ws"
    cwd.mkdir()
    written, expected = _resume(ctx, cwd, tmp_path / "claude")
    assert written is None and not expected.exists()
    _keep(ctx, b'{"n": 1}\n', cap=3)
    written, expected = _resume(ctx, cwd, tmp_path / "claude")
    assert written is None and not expected.exists()


def test_a_headless_run_keeps_its_new_lines_on_a_shared_database(ctx: Ctx, tmp_path: Path) -> None:
    config_dir, cwd = tmp_path / "claude", tmp_path / "ws"
    cwd.mkdir()
    adapter = build_adapter("claude", HarnessConfig(env={"CLAUDE_CONFIG_DIR": str(config_dir)}))
    launch = adapter.headless(LaunchSpec(cwd=cwd, session_id=CONV, prompt="count the stars"))
    agent = Agent("s-1", AgentKind.WORK_ITEM, "claude", "process", cwd, label="github:o/r#7")
    path = config_dir / "projects" / project_slug(cwd) / f"{CONV}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b'{"n": 1}\n{"n": 2}\n')
    first = keep(ctx, agent, adapter, launch)
    with path.open("ab") as handle:
        handle.write(b'{"n": 3}\n{"n"')
    second = keep(ctx, agent, adapter, launch)
    if not ctx.db.shared:
        assert (first, second) == (None, None)  # SQLite: one host, nothing to move
        assert store.get(ctx.db.connect(), CONV) is None
        return
    assert (first, second) == (store.STORED, store.STORED)
    assert store.load(ctx.db.connect(), CONV) == b'{"n": 1}\n{"n": 2}\n{"n": 3}\n'
    assert keep(ctx, agent, adapter, launch) is None  # nothing new


def test_the_move_notice_says_how_the_conversation_came_along_and_what_stayed() -> None:
    kept = move_notice("s-1", "agents-2", "agents-1", (True, True), "")
    assert "from node `agents-2`, which stopped answering, to node `agents-1`" in kept
    assert "resumed from the transcript the-loop keeps" in kept
    assert "uncommitted edits, untracked files, local commits" in kept
    own = move_notice("s-1", "agents-2", "agents-1", (True, False), "")
    assert "Its conversation was resumed." in own and "transcript" not in own
    fresh = move_notice("s-1", "agents-2", "agents-1", (False, False), "no conversation recorded")
    assert "could not be resumed (no conversation recorded): the agent starts afresh" in fresh
    assert "uncommitted edits" in fresh
