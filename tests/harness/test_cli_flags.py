"""Every flag an adapter emits exists in the installed CLI's own --help."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.harness.agent_clis import find_cli
from the_loop.config import HarnessConfig
from the_loop.harness import Launch, LaunchKind, LaunchSpec, build_adapter
from the_loop.harness.base import options_before_separator

SUBCOMMANDS = {"exec", "resume"}


def emitted_flags(launch: Launch) -> list[str]:
    """Flags before ``--`` (values glued with ``=`` cut off), without the binary."""
    options = options_before_separator(launch.argv)[1:]
    return [item.split("=", 1)[0] for item in options if item.startswith("-")]


def help_command(launch: Launch) -> list[str]:
    """``BINARY [subcommands] --help`` for the subcommand path LAUNCH uses."""
    options = options_before_separator(launch.argv)
    path = [item for item in options[1:] if item in SUBCOMMANDS]
    return [launch.argv[0], *path, "--help"]


def launches(name: str, binary: str) -> list[Launch]:
    adapter = build_adapter(name, HarnessConfig(binary=binary, model="some-model"))
    sid = str(uuid.uuid4())
    out = []
    for kind in LaunchKind:
        if kind.is_interactive and not adapter.supports_interactive:
            continue
        new = not kind.is_resume and not adapter.chooses_session_id
        out.append(adapter.launch(kind, LaunchSpec(Path("/tmp"), None if new else sid, "hi")))
    return out


def isolated_env(tmp_path: Path) -> dict[str, str]:
    """The CLIs write their state under HOME even for --help: keep it in a temp dir."""
    return {
        **os.environ,
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.mark.parametrize("name", ["claude", "codex", "gemini"])
def test_every_emitted_flag_is_in_the_cli_help(name: str, tmp_path: Path) -> None:
    binary = find_cli(name)
    if binary is None:
        pytest.fail(f"{name} is pinned in package.json but not installed: run `make setup`")
    (tmp_path / "codex").mkdir()
    env = isolated_env(tmp_path)
    helps: dict[tuple[str, ...], str] = {}
    for launch in launches(name, binary):
        command = tuple(help_command(launch))
        if command not in helps:
            done = subprocess.run(
                list(command), capture_output=True, text=True, timeout=60,
                stdin=subprocess.DEVNULL, env=env, cwd=tmp_path,
            )  # fmt: skip
            helps[command] = done.stdout + done.stderr
            assert "--help" in helps[command] or "Usage" in helps[command], helps[command]
        flags = emitted_flags(launch)
        assert flags, launch.argv
        for flag in flags:
            pattern = rf"(?<![\w-]){re.escape(flag)}(?![\w-])"
            assert re.search(pattern, helps[command]), (
                f"{name} {launch.kind}: {flag} is not in `{' '.join(command)}`"
            )
