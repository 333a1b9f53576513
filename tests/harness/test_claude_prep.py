"""Claude Code preparation: first-run dialogs settled by merging .claude.json atomically."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from the_loop.config import HarnessConfig
from the_loop.errors import SpawnFailed
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.harness.claude_prep import asks_for_bypass, claude_config_dir, prepare_claude_config

KEY = "sk-ant-api03-" + "k" * 60 + "LAST20CHARSOFTHEKEY!"


def load(path: Path) -> dict[str, object]:
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    return data


def test_fresh_config_dir(tmp_path: Path) -> None:
    cwd = tmp_path / "ws"
    cwd.mkdir()
    link = tmp_path / "link"
    link.symlink_to(cwd)
    cfg = tmp_path / "cfg"
    path = prepare_claude_config(
        link, {"CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_API_KEY": KEY}, base_env={}
    )
    assert path == cfg / ".claude.json"
    data = load(path)
    assert data["hasCompletedOnboarding"] is True
    assert data["projects"] == {
        str(link): {"hasTrustDialogAccepted": True},
        str(cwd): {"hasTrustDialogAccepted": True},
    }
    assert data["customApiKeyResponses"] == {"approved": ["LAST20CHARSOFTHEKEY!"], "rejected": []}
    assert "bypassPermissionsModeAccepted" not in data
    assert [p.name for p in cfg.iterdir() if p.name.endswith(".tmp")] == []


def test_merge_keeps_other_keys_and_is_idempotent(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg"
    cfg.mkdir()
    path = cfg / ".claude.json"
    existing = {
        "numStartups": 7,
        "theme": "dark",
        "projects": {str(tmp_path): {"allowedTools": ["Bash"]}, "/other": {"x": 1}},
        "customApiKeyResponses": {"approved": ["older"], "rejected": [KEY[-20:]]},
    }
    path.write_text(json.dumps(existing))
    path.chmod(0o640)
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_API_KEY": KEY}
    prepare_claude_config(tmp_path, env, base_env={})
    data = load(path)
    assert data["numStartups"] == 7 and data["theme"] == "dark"
    assert data["projects"] == {
        str(tmp_path): {"allowedTools": ["Bash"], "hasTrustDialogAccepted": True},
        "/other": {"x": 1},
    }
    assert data["customApiKeyResponses"] == {"approved": ["older", KEY[-20:]], "rejected": []}
    assert path.stat().st_mode & 0o777 == 0o640
    inode = path.stat().st_ino
    prepare_claude_config(tmp_path, env, base_env={})
    assert path.stat().st_ino == inode, "nothing changed: the file is not rewritten"


def test_bypass_only_when_the_args_ask(tmp_path: Path) -> None:
    assert asks_for_bypass(["--permission-mode", "bypassPermissions"])
    assert asks_for_bypass(["--permission-mode=bypassPermissions"])
    assert asks_for_bypass(["--dangerously-skip-permissions"])
    assert not asks_for_bypass(["--permission-mode", "acceptEdits"])
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    claude = build_adapter("claude", HarnessConfig(env=env))
    sid = "6f1c3f0e-8a4e-4a57-9d1c-1f0b2f8d9a10"
    hostile = claude.interactive(LaunchSpec(tmp_path, sid, "--dangerously-skip-permissions"))
    claude.prepare(hostile)
    assert "bypassPermissionsModeAccepted" not in load(tmp_path / "cfg" / ".claude.json")
    asked = build_adapter("claude", HarnessConfig(env=env, args=["--dangerously-skip-permissions"]))
    asked.prepare(asked.interactive(LaunchSpec(tmp_path, sid)))
    assert load(tmp_path / "cfg" / ".claude.json")["bypassPermissionsModeAccepted"] is True


def test_headless_launches_touch_nothing(tmp_path: Path) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    claude = build_adapter("claude", HarnessConfig(env=env))
    sid = "6f1c3f0e-8a4e-4a57-9d1c-1f0b2f8d9a10"
    claude.prepare(claude.headless(LaunchSpec(tmp_path, sid, "hi")))
    assert not (tmp_path / "cfg").exists()


def test_invalid_json_is_never_clobbered(tmp_path: Path) -> None:
    path = tmp_path / ".claude.json"
    path.write_text("{not json")
    with pytest.raises(SpawnFailed, match="not valid JSON"):
        prepare_claude_config(tmp_path, {"CLAUDE_CONFIG_DIR": str(tmp_path)}, base_env={})
    assert path.read_text() == "{not json"


def test_config_dir_resolution(tmp_path: Path) -> None:
    harness = {"CLAUDE_CONFIG_DIR": str(tmp_path / "a")}
    process = {"CLAUDE_CONFIG_DIR": str(tmp_path / "b"), "HOME": str(tmp_path / "home")}
    assert claude_config_dir(harness, process) == tmp_path / "a"
    assert claude_config_dir({}, process) == tmp_path / "b"
    assert claude_config_dir({}, {"HOME": str(tmp_path / "home")}) == tmp_path / "home"
    assert claude_config_dir({"HOME": str(tmp_path / "h2")}, {}) == tmp_path / "h2"
    assert os.environ.get("HOME") != str(tmp_path / "home")


def test_a_workspace_under_a_root_is_trusted_through_it_and_the_file_is_left_alone(
    tmp_path: Path,
) -> None:
    """Workspaces inside a root the-loop makes them in are trusted through the root (Claude
    Code takes a parent's trust): the first spawn marks the root, later spawns in new
    workspaces find everything settled and do not rewrite the file every live Claude Code
    watches; a directory outside the roots is still trusted on its own."""
    root, cfg = tmp_path / "workspaces", tmp_path / "cfg"
    env = {"CLAUDE_CONFIG_DIR": str(cfg), "ANTHROPIC_API_KEY": KEY}
    for name in ("a", "b"):
        (root / name).mkdir(parents=True)
    path = prepare_claude_config(root / "a", env, base_env={}, roots=[root])
    assert load(path)["projects"] == {str(root): {"hasTrustDialogAccepted": True}}
    written = path.stat().st_mtime_ns, path.stat().st_ino
    prepare_claude_config(root / "b", env, base_env={}, roots=[root])
    assert (path.stat().st_mtime_ns, path.stat().st_ino) == written, "rewritten at a spawn"
    elsewhere = tmp_path / "repo"
    elsewhere.mkdir()
    prepare_claude_config(elsewhere, env, base_env={}, roots=[root])
    assert set(load(path)["projects"]) == {str(root), str(elsewhere)}  # type: ignore[arg-type]
