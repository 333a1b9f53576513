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
