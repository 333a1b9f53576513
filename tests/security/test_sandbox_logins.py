"""A confined agent is logged in as its operator is: at a confined spawn the operator's harness
login files (Claude Code's ``.credentials.json``, Codex's ``auth.json``, Gemini's OAuth file)
are copied into the agent's own home, private to it; a copy the agent refreshed since is kept,
and nothing is made up where the operator has no login."""

from __future__ import annotations

import os
from pathlib import Path

from the_loop.agent.confine import carry_logins


def test_the_operators_logins_reach_the_agents_home(tmp_path: Path) -> None:
    operator, claude, home = tmp_path / "op", tmp_path / "claude-config", tmp_path / "agent"
    (claude).mkdir()
    (claude / ".credentials.json").write_text('{"claudeAiOauth": "op"}')
    (operator / ".codex").mkdir(parents=True)
    (operator / ".codex" / "auth.json").write_text('{"tokens": "op"}')
    env = {"HOME": str(operator), "CLAUDE_CONFIG_DIR": str(claude)}
    copied = carry_logins(env, home)
    assert sorted(p.relative_to(home).as_posix() for p in copied) == [
        ".claude/.credentials.json",
        ".codex/auth.json",
    ]
    assert (home / ".claude" / ".credentials.json").read_text() == '{"claudeAiOauth": "op"}'
    assert (home / ".claude" / ".credentials.json").stat().st_mode & 0o777 == 0o600
    assert not (home / ".gemini").exists()

    refreshed = home / ".claude" / ".credentials.json"
    refreshed.write_text('{"claudeAiOauth": "refreshed by the agent"}')
    later = (claude / ".credentials.json").stat().st_mtime + 60
    os.utime(refreshed, (later, later))
    assert carry_logins(env, home) == []
    assert "refreshed" in refreshed.read_text()


def test_a_link_the_agent_planted_in_its_home_is_never_written_through(tmp_path: Path) -> None:
    """The agent can write its home: a symlink it leaves where the copy's staging file or its
    folder goes must not make the daemon write the operator's login over a file it names."""
    operator, home = tmp_path / "op", tmp_path / "agent"
    (operator / ".codex").mkdir(parents=True)
    (operator / ".codex" / "auth.json").write_text('{"tokens": "op"}')
    (operator / ".gemini").mkdir()
    (operator / ".gemini" / "oauth_creds.json").write_text('{"token": "op"}')
    victim, elsewhere = tmp_path / "the-loop.db", tmp_path / "elsewhere"
    victim.write_text("the state database")
    elsewhere.mkdir()
    (home / ".codex").mkdir(parents=True)
    for pid_name in (".auth.json.the-loop", f".auth.json.{os.getpid()}.the-loop"):
        (home / ".codex" / pid_name).symlink_to(victim)
    (home / ".gemini").symlink_to(elsewhere)

    copied = carry_logins({"HOME": str(operator)}, home)

    assert victim.read_text() == "the state database"
    assert list(elsewhere.iterdir()) == []
    assert sorted(p.relative_to(home).as_posix() for p in copied) == [
        ".codex/auth.json",
        ".gemini/oauth_creds.json",
    ]
    assert (home / ".codex" / "auth.json").read_text() == '{"tokens": "op"}'
    assert not (home / ".gemini").is_symlink()
