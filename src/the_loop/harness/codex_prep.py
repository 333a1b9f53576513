"""Codex's own settings, prepared before an unattended interactive spawn.

An interactive Codex asks "Trust this folder?" for a directory it has not seen, and waits: the
answer it saves is ``[projects."<absolute cwd>"] trust_level = "trusted"`` in
``$CODEX_HOME/config.toml`` (default ``~/.codex``). Before an interactive spawn that entry is
added for the workspace when the file has no entry for it; an entry the operator wrote (trusted
or not) is left as it is, and so is every other line: the table is appended, under a lock file,
after checking that the result still parses. Headless runs (``codex exec``) need none of it.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path

from the_loop.agent_files import Folder
from the_loop.errors import SpawnFailed
from the_loop.harness.claude_prep import trusted_paths
from the_loop.harness.homes import codex_home
from the_loop.harness.operator_files import parsed

CONFIG_FILE = "config.toml"


def provider_urls(env: Mapping[str, str]) -> list[str]:
    """The ``base_url`` of each model provider the operator's ``config.toml`` (ENV's
    ``CODEX_HOME``) declares under ``[model_providers.NAME]``: where a Codex of theirs talks to
    its model. Empty when the file is missing or not TOML (Codex says so itself)."""
    providers = _providers(env)[1]
    urls = (entry.get("base_url") for entry in providers.values())
    return [url for url in urls if isinstance(url, str) and url]


def own_provider(env: Mapping[str, str]) -> tuple[str, str | None] | None:
    """The model provider the operator's ``config.toml`` chooses (``model_provider``) when it
    declares it itself: its name and the variable its key is read from (``env_key``, None
    when it needs none); None for Codex's own providers (a login or ``OPENAI_API_KEY``)."""
    chosen, providers = _providers(env)
    entry = providers.get(chosen) if chosen else None
    if chosen is None or entry is None:
        return None
    key = entry.get("env_key")
    return chosen, key if isinstance(key, str) and key else None


def _providers(env: Mapping[str, str]) -> tuple[str | None, dict[str, dict[str, object]]]:
    """The chosen ``model_provider`` and the ``model_providers`` tables of the operator's
    ``config.toml`` (nothing when it is missing or not TOML)."""
    found = parsed(codex_home(env) / CONFIG_FILE, _read_providers)
    return found if found is not None else (None, {})


def _read_providers(text: str) -> tuple[str | None, dict[str, dict[str, object]]]:
    data = tomllib.loads(text)
    chosen = data.get("model_provider")
    tables = data.get("model_providers")
    entries = tables.items() if isinstance(tables, dict) else ()
    providers = {name: entry for name, entry in entries if isinstance(entry, dict)}
    return (chosen if isinstance(chosen, str) else None), providers


def prepare_codex_config(
    cwd: Path,
    env: Mapping[str, str],
    base_env: Mapping[str, str] | None = None,
    *,
    agents: bool = False,
) -> Path:
    """Mark CWD trusted in Codex's ``config.toml`` unless it has an entry; return the path.
    AGENTS: the folder is a confined agent's own (``the_loop.agent_files``: no link there is
    followed). Raises ``SpawnFailed`` when the file is not valid TOML or cannot take the entry."""
    home = codex_home(env, base_env)
    path = home / CONFIG_FILE
    try:
        with Folder(home, agents=agents) as folder, folder.locked(f"{CONFIG_FILE}.the-loop.lock"):
            text = _text(path, folder.read(CONFIG_FILE))
            addition = _missing_entries(path, text, trusted_paths(cwd))
            if addition:
                folder.append(CONFIG_FILE, _appended(path, text, addition))
    except OSError as exc:
        raise SpawnFailed(f"cannot prepare Codex settings in {path}: {exc}") from None
    return path


def _text(path: Path, raw: bytes | None) -> str:
    try:
        return "" if raw is None else raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpawnFailed(f"{path} is not valid TOML (not UTF-8); fix or remove it") from None


def _missing_entries(path: Path, text: str, paths: list[str]) -> str:
    try:
        projects = tomllib.loads(text).get("projects")
    except tomllib.TOMLDecodeError as exc:
        raise SpawnFailed(f"{path} is not valid TOML ({exc}); fix or remove it") from None
    known = projects if isinstance(projects, dict) else {}
    # A TOML basic string takes JSON's escapes for quotes, backslashes and control characters.
    tables = [
        f'[projects.{json.dumps(p)}]\ntrust_level = "trusted"\n' for p in paths if p not in known
    ]
    return "".join(tables)


def _appended(path: Path, text: str, addition: str) -> str:
    """What to append to TEXT (the file at PATH) for ADDITION, checked to parse."""
    glue = "" if not text or text.endswith("\n") else "\n"
    appended = f"{glue}\n# added by the-loop: the workspace of an agent it started\n{addition}"
    try:
        tomllib.loads(text + appended)
    except tomllib.TOMLDecodeError:
        raise SpawnFailed(
            f"cannot add the workspace's trust_level to {path} (its projects table is written "
            "inline); mark the workspace trusted there yourself"
        ) from None
    return appended
