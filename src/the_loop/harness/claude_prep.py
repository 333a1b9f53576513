"""Claude Code's own settings, prepared before an unattended spawn.

A fresh config directory blocks an interactive start with first-run dialogs: onboarding, the
workspace trust question and, when ``ANTHROPIC_API_KEY`` is set, "use this API key?". They are
settled beforehand in ``<config dir>/.claude.json``, the file the CLI reads. The file is merged,
never replaced: other keys are kept, the write is atomic (temporary file + rename) and done
under a lock file so two spawns do not lose each other's entries. A permissions question is
only ever pre-answered when the harness args themselves ask for a bypass mode.

The CLI takes a directory as trusted when it or one of its parents is. A workspace inside one
of the directories the-loop makes workspaces in (ROOTS) is trusted through that directory,
marked once; the file is written only when something is missing, so a spawn usually leaves it
alone. Every live Claude Code watches that file and reads it again when it changes, so a
rewrite at every spawn cost every live agent a re-read (decision 0067).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from the_loop.agent_files import Folder
from the_loop.errors import SpawnFailed
from the_loop.harness.homes import claude_dir, harness_dir
from the_loop.harness.operator_files import parsed

CONFIG_FILE = ".claude.json"
LOCK_FILE = f"{CONFIG_FILE}.the-loop.lock"
BYPASS_MODES = frozenset({"bypassPermissions"})
_BYPASS_FLAGS = frozenset({"--dangerously-skip-permissions"})


def claude_config_dir(env: Mapping[str, str], base_env: Mapping[str, str] | None = None) -> Path:
    """The directory holding ``.claude.json``: ``CLAUDE_CONFIG_DIR`` from ENV, then from the
    process environment, else ``$HOME``."""
    return harness_dir("CLAUDE_CONFIG_DIR", "", env, base_env)


def settings_base_url(env: Mapping[str, str]) -> str | None:
    """The ``ANTHROPIC_BASE_URL`` the operator's own ``settings.json`` (in ENV's
    ``CLAUDE_CONFIG_DIR``, else ``~/.claude``) sets in its ``env``: where a Claude Code of
    theirs talks to its model (a gateway of their own). None when it sets none."""
    found = parsed(claude_dir(env) / "settings.json", _base_url)
    return found if isinstance(found, str) and found else None


def _base_url(text: str) -> object:
    given = json.loads(text)
    variables = given.get("env") if isinstance(given, dict) else None
    return variables.get("ANTHROPIC_BASE_URL") if isinstance(variables, dict) else None


def asks_for_bypass(options: Sequence[str]) -> bool:
    """True when OPTIONS (the argv before ``--``) ask for a permission bypass mode."""
    for index, item in enumerate(options):
        if item in _BYPASS_FLAGS:
            return True
        if item.startswith("--permission-mode="):
            mode: str | None = item.split("=", 1)[1]
        elif item == "--permission-mode":
            mode = options[index + 1] if index + 1 < len(options) else None
        else:
            continue
        if mode in BYPASS_MODES:
            return True
    return False


def trusted_paths(cwd: Path, roots: Sequence[Path] = ()) -> list[str]:
    """The project keys to mark trusted: the first of ROOTS that holds CWD, else CWD itself;
    made absolute, and its real path too when different (the CLI keys projects by the
    directory it finds itself in)."""
    absolute = os.path.abspath(cwd)
    real = os.path.realpath(cwd)
    for root in roots:
        for top in {os.path.abspath(root), os.path.realpath(root)}:
            if _inside(absolute, top) or _inside(real, top):
                return trusted_paths(Path(top))
    return [absolute] if real == absolute else [absolute, real]


def _inside(path: str, top: str) -> bool:
    return path != top and path.startswith(top.rstrip(os.sep) + os.sep)


def _trusted(projects: dict[str, Any], path: str) -> bool:
    """Whether PATH or one of its parents is marked trusted in PROJECTS."""
    while True:
        entry = projects.get(path)
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is True:
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def merge_settings(
    data: dict[str, Any], paths: Sequence[str], key_suffix: str | None, bypass: bool
) -> bool:
    """Merge the settings into DATA in place; return True when anything changed."""
    before = json.dumps(data, sort_keys=True)
    data["hasCompletedOnboarding"] = True
    projects = data.get("projects")
    if not isinstance(projects, dict):
        projects = data["projects"] = {}
    for path in paths:
        if _trusted(projects, path):
            continue
        entry = projects.get(path)
        if not isinstance(entry, dict):
            entry = projects[path] = {}
        entry["hasTrustDialogAccepted"] = True
    if key_suffix:
        _approve_key(data, key_suffix)
    if bypass:
        data["bypassPermissionsModeAccepted"] = True
    return json.dumps(data, sort_keys=True) != before


def _approve_key(data: dict[str, Any], suffix: str) -> None:
    responses = data.get("customApiKeyResponses")
    if not isinstance(responses, dict):
        responses = data["customApiKeyResponses"] = {}
    approved = responses.get("approved")
    if not isinstance(approved, list):
        approved = responses["approved"] = []
    if suffix not in approved:
        approved.append(suffix)
    rejected = responses.get("rejected")
    if isinstance(rejected, list) and suffix in rejected:
        rejected.remove(suffix)
    responses.setdefault("rejected", [])


def prepare_claude_config(
    cwd: Path,
    env: Mapping[str, str],
    options: Sequence[str] = (),
    base_env: Mapping[str, str] | None = None,
    roots: Sequence[Path] = (),
    *,
    agents: bool = False,
) -> Path:
    """Settle Claude Code's first-run dialogs for CWD; return the ``.claude.json`` path.

    ENV is the harness's extra environment (``CLAUDE_CONFIG_DIR``, ``ANTHROPIC_API_KEY`` are
    looked up there first, then in BASE_ENV, default the process environment). OPTIONS is the
    harness argv before ``--``. A CWD inside one of ROOTS is trusted through that root. AGENTS:
    the folder is a confined agent's own (``the_loop.agent_files``: no link there is followed).
    Raises ``SpawnFailed`` when the existing file cannot be read as a JSON object or the folder
    cannot be written; the file is never clobbered.
    """
    base = os.environ if base_env is None else base_env
    config_dir = claude_config_dir(env, base)
    api_key = env.get("ANTHROPIC_API_KEY") or base.get("ANTHROPIC_API_KEY")
    paths, bypass = trusted_paths(cwd, roots), asks_for_bypass(options)
    suffix = api_key[-20:] if api_key else None
    path = config_dir / CONFIG_FILE
    try:
        with Folder(config_dir, agents=agents) as folder, folder.locked(LOCK_FILE):
            data = _parsed(path, folder.read(CONFIG_FILE))
            if merge_settings(data, paths, suffix, bypass):
                folder.replace(CONFIG_FILE, json.dumps(data, indent=2) + "\n")
    except OSError as exc:
        raise SpawnFailed(f"cannot prepare Claude Code settings in {path}: {exc}") from None
    return path


def _parsed(path: Path, raw: bytes | None) -> dict[str, Any]:
    """The JSON object RAW (the bytes of PATH) holds; empty when there is no file or no text."""
    try:
        text = "" if raw is None else raw.decode("utf-8")
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise SpawnFailed(f"{path} is not valid JSON ({exc}); fix or remove it") from None
    if not isinstance(data, dict):
        raise SpawnFailed(f"{path} does not hold a JSON object; fix or remove it")
    return data
