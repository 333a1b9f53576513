"""Workspaces: a worktree per item from a local clone, setup once, removeOnClose honoured."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from the_loop.config import Config
from the_loop.errors import BadInput
from the_loop.refs import WorkItemRef
from the_loop.work_items import workspace

REF = WorkItemRef("octo", "repo", 15)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    env_args = ["-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run(["git", "init", "--quiet", "-b", "main", str(path)], check=True)
    (path / "README.md").write_text("hello\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(
        ["git", *env_args, "-C", str(path), "commit", "--quiet", "-m", "init"], check=True
    )
    return path


def config_for(tmp_path: Path, **workspaces: object) -> Config:
    return Config.model_validate(
        {
            "stateDir": str(tmp_path / "state"),
            "workspaces": {
                "enabled": True,
                "repos": {"octo/repo": str(tmp_path / "clone")},
                **workspaces,
            },
        }
    )


def current_branch(path: Path) -> str:
    out = subprocess.run(
        ["git", "-C", str(path), "branch", "--show-current"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def test_worktree_on_the_right_branch_setup_once(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, setup="echo ran >> setup.log")
    first = workspace.prepare(config, REF)
    assert first.created and first.setup_ran
    assert first.path == config.workspace_root / "github-octo-repo-15"
    assert current_branch(first.path) == "the-loop/github-octo-repo-15"
    assert (first.path / "README.md").read_text() == "hello\n"
    again = workspace.prepare(config, REF)
    assert not again.created and not again.setup_ran
    assert (first.path / "setup.log").read_text() == "ran\n"


def test_remove_on_close_and_recreate_keeps_the_branch(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, setup="echo ran >> setup.log")
    ws = workspace.prepare(config, REF)
    (ws.path / "work.txt").write_text("agent work")
    assert workspace.remove(config, REF)
    assert not ws.path.exists()
    branches = subprocess.run(
        ["git", "-C", str(tmp_path / "clone"), "branch", "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "the-loop/github-octo-repo-15" in branches
    again = workspace.prepare(config, REF)
    assert again.created and again.setup_ran
    assert current_branch(again.path) == "the-loop/github-octo-repo-15"


def test_failing_setup_is_a_clear_error(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, setup="echo broken >&2; exit 3")
    with pytest.raises(workspace.WorkspaceError, match=r"exited 3.*broken"):
        workspace.prepare(config, REF)


def test_clone_path_that_is_not_a_repo(tmp_path: Path) -> None:
    (tmp_path / "clone").mkdir()
    with pytest.raises(workspace.WorkspaceError, match="not a git clone"):
        workspace.prepare(config_for(tmp_path), REF)


def test_disabled_workspaces_use_the_clone_or_a_scratch_dir(tmp_path: Path) -> None:
    config = Config.model_validate(
        {"stateDir": str(tmp_path / "s"), "workspaces": {"repos": {"octo/repo": str(tmp_path)}}}
    )
    assert workspace.prepare(config, REF).path == tmp_path.absolute()
    other = workspace.prepare(config, WorkItemRef("octo", "other", 1))
    assert other.path == (tmp_path / "s" / "scratch" / "github-octo-other-1").absolute()
    assert other.path.is_dir()


def test_path_components_are_validated() -> None:
    with pytest.raises(BadInput):
        WorkItemRef("..", "repo", 1)
    with pytest.raises(BadInput):
        WorkItemRef("octo", "..", 1)
    with pytest.raises(BadInput):
        WorkItemRef.parse("github:octo/re/po#1/../x")
