"""What the daemon prepares in a confined agent's own home before each spawn (Claude Code's
``.claude.json``, Codex's ``config.toml``, their lock files, a restored transcript) goes
through nothing the agent left there: a link to a file of the daemon's is neither read into
the agent's settings nor written through; a link where a folder goes is replaced; a FIFO does
not hang the spawn; a lock the agent holds gives up. The operator's own folders (an agent that
is not confined) are still followed, as any program of theirs would."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import Env
from the_loop.agent import Agent, AgentKind
from the_loop.agent.attention.reports import transcript_last_message
from the_loop.agent.spend.transcripts import new_lines, restore
from the_loop.agent_files import Folder, open_agent_file
from the_loop.config import HarnessConfig
from the_loop.context import Ctx, open_ctx
from the_loop.errors import SpawnFailed
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.harness.claude import project_slug
from the_loop.harness.claude_prep import prepare_claude_config
from the_loop.harness.codex_prep import prepare_codex_config
from the_loop.store import transcripts as store

pytestmark = pytest.mark.timeout(30)  # a FIFO read or a held lock would hang a spawn for good
SECRET = "the daemon's own, never the agent's"


@pytest.fixture
def daemons(tmp_path: Path) -> Path:
    """A folder of the daemon's (its state dir, say) with a JSON file in it."""
    where = tmp_path / "daemons-own"
    where.mkdir()
    (where / "daemon-config.json").write_text(json.dumps({"apiToken": SECRET}))
    return where


def test_claude_settings_in_an_agents_home_go_through_no_link(
    tmp_path: Path, daemons: Path
) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / ".claude.json").symlink_to(daemons / "daemon-config.json")
    (home / ".claude" / ".claude.json.the-loop.lock").symlink_to(daemons / "planted")
    env = {"CLAUDE_CONFIG_DIR": str(home / ".claude")}

    path = prepare_claude_config(tmp_path, env, agents=True)

    assert not path.is_symlink() and SECRET not in path.read_text()
    assert path.stat().st_mode & 0o777 == 0o600  # not the link's own 0777
    assert json.loads(path.read_text())["hasCompletedOnboarding"] is True
    assert sorted(p.name for p in daemons.iterdir()) == ["daemon-config.json"]
    assert json.loads((daemons / "daemon-config.json").read_text()) == {"apiToken": SECRET}


def test_an_agents_claude_folder_that_is_a_link_is_replaced(tmp_path: Path, daemons: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / ".claude").symlink_to(daemons)
    prepare_claude_config(tmp_path, {"CLAUDE_CONFIG_DIR": str(home / ".claude")}, agents=True)
    assert (home / ".claude").is_dir() and not (home / ".claude").is_symlink()
    assert sorted(p.name for p in daemons.iterdir()) == ["daemon-config.json"]


@pytest.mark.parametrize("name", [".claude.json", ".claude.json.the-loop.lock"])
def test_a_fifo_in_an_agents_claude_folder_holds_no_spawn(tmp_path: Path, name: str) -> None:
    config = tmp_path / "home" / ".claude"
    config.mkdir(parents=True)
    os.mkfifo(config / name)
    path = prepare_claude_config(tmp_path, {"CLAUDE_CONFIG_DIR": str(config)}, agents=True)
    assert json.loads(path.read_text())["hasCompletedOnboarding"] is True


def test_a_lock_the_agent_holds_gives_up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("the_loop.agent_files.LOCK_WAIT", 0.2)
    config = tmp_path / "home" / ".claude"
    config.mkdir(parents=True)
    with open(config / ".claude.json.the-loop.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(SpawnFailed, match="cannot prepare Claude Code settings"):
            prepare_claude_config(tmp_path, {"CLAUDE_CONFIG_DIR": str(config)}, agents=True)


def test_codex_settings_in_an_agents_home_go_through_no_link(tmp_path: Path, daemons: Path) -> None:
    codex = tmp_path / "home" / ".codex"
    codex.mkdir(parents=True)
    (codex / "config.toml").symlink_to(daemons / "created-by-the-daemon.toml")
    (codex / "config.toml.the-loop.lock").symlink_to(daemons / "planted")

    path = prepare_codex_config(tmp_path, {"CODEX_HOME": str(codex)}, agents=True)

    assert not path.is_symlink() and "trust_level" in path.read_text()
    assert sorted(p.name for p in daemons.iterdir()) == ["daemon-config.json"]


def test_a_fifo_for_codex_settings_holds_no_spawn(tmp_path: Path) -> None:
    codex = tmp_path / "home" / ".codex"
    codex.mkdir(parents=True)
    os.mkfifo(codex / "config.toml")
    path = prepare_codex_config(tmp_path, {"CODEX_HOME": str(codex)}, agents=True)
    assert path.is_file() and "trust_level" in path.read_text()


def test_the_operators_own_folders_are_followed(tmp_path: Path) -> None:
    """Not confined, the settings are the operator's: a folder of theirs that is a link (kept
    in their dotfiles) is used through it."""
    dotfiles = tmp_path / "dotfiles" / "claude"
    dotfiles.mkdir(parents=True)
    (tmp_path / ".claude").symlink_to(dotfiles)
    prepare_claude_config(tmp_path, {"CLAUDE_CONFIG_DIR": str(tmp_path / ".claude")})
    assert (tmp_path / ".claude").is_symlink() and (dotfiles / ".claude.json").is_file()


@pytest.fixture
def ctx(loop_env: Env) -> Iterator[Ctx]:
    c = open_ctx(loop_env.config_path)
    yield c
    c.db.close()


def test_a_transcript_restored_into_an_agents_home_goes_through_no_link(
    ctx: Ctx, tmp_path: Path, daemons: Path
) -> None:
    conversation = "5d1e4c7a-3b2f-4e6a-9c8d-7f6e5d4c3b2a"
    with ctx.db.transaction() as tx:
        store.append(tx, conversation, "s-1", 0, b'{"kept": 1}\n', now=1.0)
    home, cwd = tmp_path / "home", tmp_path / "ws"
    cwd.mkdir()
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").symlink_to(daemons)
    adapter = build_adapter("claude", HarnessConfig())
    env = {"HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude")}
    spec = LaunchSpec(cwd=cwd, session_id=conversation)
    launch = replace(adapter.resume_interactive(spec), env=env, agent_home=home)
    agent = Agent("s-1", AgentKind.WORK_ITEM, "claude", "tmux", cwd, label="github:o/r#7")

    written = restore(ctx, agent, adapter, launch)

    expected = home / ".claude" / "projects" / project_slug(cwd) / f"{conversation}.jsonl"
    assert written == expected and expected.read_bytes() == b'{"kept": 1}\n'
    assert not (home / ".claude" / "projects").is_symlink()
    assert sorted(p.name for p in daemons.iterdir()) == ["daemon-config.json"]


def test_a_path_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    with Folder(tmp_path / "home", agents=True) as folder:
        for bad in ("../out", "/etc/passwd", ""):
            with pytest.raises(ValueError, match="not a path inside"):
                folder.replace(bad, "x")
    assert not (tmp_path / "out").exists()


def test_a_transcript_behind_a_folder_link_out_of_the_home_is_not_read(
    tmp_path: Path, daemons: Path
) -> None:
    """A transcript is named by the agent (its hook reports the path, checked inside its own
    folder then); a folder on the way swapped for a link afterwards leads nowhere: what the
    daemon would read there (a file of the state dir) is refused, so it is neither kept in the
    store, where a move to another node would write it back into the agent's home, nor shown."""
    home = tmp_path / "home"
    projects = home / ".claude" / "projects"
    projects.mkdir(parents=True)
    (daemons / "t.jsonl").write_text(
        json.dumps({"message": {"role": "assistant", "content": SECRET}}) + "\n"
    )
    (projects / "x").symlink_to(daemons)
    path = projects / "x" / "t.jsonl"

    with pytest.raises(OSError, match="not inside the agent's own folder"):
        open_agent_file(path, home)
    assert transcript_last_message(str(path), str(home / ".claude")) is None
    assert new_lines(str(path), 0, 1 << 20, home) == (b"", 0)
    with open_agent_file(path) as handle:  # not confined: the operator's own links are theirs
        assert SECRET in handle.read().decode()
