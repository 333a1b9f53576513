"""Workspaces: a git worktree per work item, on branch ``the-loop/<slug>``.

The only module that runs git. The worktree is made from the clone named in
``workspaces.repos`` (or a clone made on first use under ``<root>/_clones``), ``setup`` runs
once in a new worktree, and the worktree is removed on close only with ``removeOnClose``.
With workspaces disabled, an agent works in the configured clone of its repository when there
is one, else in an empty scratch directory of its own.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from the_loop.config import Config
from the_loop.errors import BadInput, LoopError
from the_loop.refs import WorkItemRef

GIT_TIMEOUT = 300.0


class WorkspaceError(LoopError):
    """git or the setup command failed while preparing a workspace."""

    status = 500
    exit_code = 1
    code = "workspace_failed"


@dataclass(frozen=True, slots=True)
class Workspace:
    path: Path
    branch: str | None
    created: bool
    setup_ran: bool


def _git(args: list[str], cwd: Path | None = None) -> str:
    try:
        proc = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except FileNotFoundError:
        raise WorkspaceError("git is not installed (apt install git · brew install git)") from None
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"git {args[0]} timed out after {GIT_TIMEOUT:.0f}s") from None
    if proc.returncode != 0:
        raise WorkspaceError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


def _inside(root: Path, path: Path) -> Path:
    resolved = path.resolve()
    if not resolved.is_relative_to(root.resolve()):
        raise BadInput(f"workspace path {path} escapes the workspace root {root}")
    return resolved


def branch_name(ref: WorkItemRef) -> str:
    return f"the-loop/{ref.slug}"


def clone_for(config: Config, ref: WorkItemRef) -> Path:
    """The local clone of REF's repository, cloning it on first use."""
    configured = config.workspaces.repos.get(ref.full_name)
    if configured is not None:
        path = configured.expanduser().absolute()
        if not (path / ".git").exists():
            raise WorkspaceError(f"workspaces.repos.{ref.full_name}: {path} is not a git clone")
        return path
    root = config.workspace_root
    clone = _inside(root, root / "_clones" / ref.host / ref.owner / ref.repo)
    if not (clone / ".git").exists():
        clone.parent.mkdir(parents=True, exist_ok=True)
        _git(["clone", "--quiet", f"https://{ref.host}/{ref.owner}/{ref.repo}.git", str(clone)])
    return clone


def prepare(config: Config, ref: WorkItemRef) -> Workspace:
    """The directory REF's agent works in, made ready (see the module docstring)."""
    if not config.workspaces.enabled or ref.is_local:  # a local item has no repository
        return _plain(config, ref)
    root = config.workspace_root
    root.mkdir(parents=True, exist_ok=True)
    path = _inside(root, root / ref.slug)
    branch = branch_name(ref)
    created = False
    if not (path / ".git").exists():
        clone = clone_for(config, ref)
        _add_worktree(clone, path, branch)
        created = True
    setup_ran = _run_setup_once(config, path, ref)
    return Workspace(path=path, branch=branch, created=created, setup_ran=setup_ran)


def _plain(config: Config, ref: WorkItemRef) -> Workspace:
    configured = config.workspaces.repos.get(ref.full_name)
    if configured is not None:
        return Workspace(configured.expanduser().absolute(), None, False, False)
    scratch = _inside(config.state_path, config.state_path / "scratch" / ref.slug)
    scratch.mkdir(parents=True, exist_ok=True)
    return Workspace(scratch, None, False, False)


def _add_worktree(clone: Path, path: Path, branch: str) -> None:
    _git(["worktree", "prune"], cwd=clone)
    exists = (
        subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=clone,
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )
    if exists:
        _git(["worktree", "add", "--quiet", str(path), branch], cwd=clone)
    else:
        _git(["worktree", "add", "--quiet", "-b", branch, str(path)], cwd=clone)


def _setup_marker(config: Config, ref: WorkItemRef) -> Path:
    return config.workspace_root / ".setup-done" / ref.slug


def _run_setup_once(config: Config, path: Path, ref: WorkItemRef) -> bool:
    command = config.workspaces.setup
    marker = _setup_marker(config, ref)
    if not command or marker.exists():
        return False
    try:
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=path,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise WorkspaceError(f"workspaces.setup timed out in {path}") from None
    if proc.returncode != 0:
        raise WorkspaceError(
            f"workspaces.setup exited {proc.returncode} in {path}: "
            f"{(proc.stderr or proc.stdout).strip()[-500:]}"
        )
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(command, encoding="utf-8")
    return True


def remove(config: Config, ref: WorkItemRef) -> bool:
    """Remove REF's worktree (the branch is kept); True when something was removed."""
    if not config.workspaces.enabled or ref.is_local:
        return False
    root = config.workspace_root
    path = _inside(root, root / ref.slug)
    if not path.exists():
        return False
    git_file = path / ".git"
    if git_file.is_file():
        common = _git(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=path)
        clone = Path(common.strip()).parent
        _git(["worktree", "remove", "--force", str(path)], cwd=clone)
    else:
        shutil.rmtree(path)
    _setup_marker(config, ref).unlink(missing_ok=True)
    return True
