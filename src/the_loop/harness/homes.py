"""Where an agent CLI keeps its files: the folder an environment variable names, else one
under ``$HOME`` — looked up in the harness's own environment first, then the daemon's. One
place for every reader (logins carried into a confined agent's home, transcripts, settings,
the doctor's login check)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["claude_dir", "codex_home", "harness_dir"]


def harness_dir(
    variable: str, default: str, env: Mapping[str, str], base_env: Mapping[str, str] | None = None
) -> Path:
    """The folder VARIABLE names in ENV (the harness's environment), else in BASE_ENV (the
    daemon's, by default); else ``$HOME/DEFAULT`` (``HOME`` looked up the same way). An empty
    VARIABLE names none."""
    base = os.environ if base_env is None else base_env
    configured = (env.get(variable) or base.get(variable)) if variable else None
    if configured:
        return Path(configured).expanduser()
    home = env.get("HOME") or base.get("HOME")
    return (Path(home) if home else Path.home()) / default


def claude_dir(env: Mapping[str, str], base_env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's folder (``settings.json``, ``.credentials.json``, ``projects/``):
    ``CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    return harness_dir("CLAUDE_CONFIG_DIR", ".claude", env, base_env)


def codex_home(env: Mapping[str, str], base_env: Mapping[str, str] | None = None) -> Path:
    """Codex's folder (``config.toml``, ``auth.json``, ``sessions/``): ``CODEX_HOME``, else
    ``~/.codex``."""
    return harness_dir("CODEX_HOME", ".codex", env, base_env)
