"""Workspaces: a git worktree per work item, on branch ``the-loop/<slug>``.

The only module that runs git. Every worktree of a repository is made from one local clone,
so they all share its objects: the clone named in ``workspaces.repos``, else one made on first
use under ``<root>/_clones`` (from ``cloneUrl``, without a checkout of its own). With
``workspaces.sparse`` a worktree checks out only the listed directories (cone mode).

A new worktree of a large repository costs its checkout (about 100,000 files written), so with
``workspaces.spare`` one ready worktree per repository waits under ``<root>/_spare``, detached
at the clone's HEAD: the next spawn takes it (``git worktree move``, then a new branch at the
same commit: no file is written) and a new spare is made after, in a thread of its own, off
the spawn's path. A ``.ready`` note, written last, says a spare is complete (commit, sparse
paths); an flock per repository keeps a spawn from taking the spare being made.

``setup`` runs once in a new worktree, and the worktree is removed on close only with
``removeOnClose`` (or by age, ``keepDays``, through ``work_items.prune``). ``disk_usage`` is the
disk the worktrees use, measured in a thread and cached. With workspaces disabled, an agent
works in the configured clone of its repository when there is one, else in an empty scratch
directory of its own.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from the_loop.config import Config
from the_loop.errors import BadInput, LoopError
from the_loop.refs import WorkItemRef, branch_name
from the_loop.wire import Timestamp, Wire

GIT_TIMEOUT = 300.0
DISK_MAX_AGE_SECONDS = 60.0
"""How old a disk figure may be before ``disk_usage`` measures again (in a thread)."""
SCRATCH = "scratch"
"""Under the state directory: the empty directory an item without a worktree works in."""
log = logging.getLogger(__name__)


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
    from_spare: bool = False
    """The worktree was the repository's spare, taken ready (see the module docstring)."""


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


def _existing_clone(config: Config, ref: WorkItemRef) -> Path | None:
    """The local clone of REF's repository when there is one (never clones)."""
    configured = config.workspaces.repos.get(ref.full_name)
    root = config.workspace_root
    clone = (
        configured.expanduser().absolute()
        if configured is not None
        else root / "_clones" / ref.host / ref.owner / ref.repo
    )
    return clone if (clone / ".git").exists() else None


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
    if (clone / ".git").exists():
        return clone
    clone.parent.mkdir(parents=True, exist_ok=True)
    with _locked(clone, wait=True):  # two first spawns of a repository clone it once
        if not (clone / ".git").exists():
            url = config.workspaces.clone_url.format(host=ref.host, owner=ref.owner, repo=ref.repo)
            partial = clone.with_name(f".{clone.name}.cloning")
            shutil.rmtree(partial, ignore_errors=True)
            _git(["clone", "--quiet", "--no-checkout", url, str(partial)])
            partial.rename(clone)
    return clone


def sparse_of(config: Config, ref: WorkItemRef) -> list[str]:
    """The directories REF's worktrees check out (empty: every file)."""
    return list(config.workspaces.sparse.get(ref.full_name, []))


def prepare(config: Config, ref: WorkItemRef) -> Workspace:
    """The directory REF's agent works in, made ready (see the module docstring)."""
    if not config.workspaces.enabled or ref.is_local:  # a local item has no repository
        return _plain(config, ref)
    root = config.workspace_root
    root.mkdir(parents=True, exist_ok=True)
    path = _inside(root, root / ref.slug)
    branch = branch_name(ref)
    created = from_spare = False
    if not (path / ".git").exists():
        clone = clone_for(config, ref)
        sparse = sparse_of(config, ref)
        from_spare = config.workspaces.spare and _take_spare(config, ref, clone, path, branch)
        if not from_spare:
            _add_worktree(clone, path, branch, sparse)
        created = True
        if config.workspaces.spare:
            threading.Thread(
                target=_spare_quietly, args=(config, ref), name="workspace-spare", daemon=True
            ).start()
    setup_ran = _run_setup_once(config, path, ref)
    return Workspace(path, branch, created, setup_ran, from_spare)


def _plain(config: Config, ref: WorkItemRef) -> Workspace:
    configured = config.workspaces.repos.get(ref.full_name)
    if configured is not None:
        return Workspace(configured.expanduser().absolute(), None, False, False)
    scratch = _inside(config.state_path, config.state_path / SCRATCH / ref.slug)
    scratch.mkdir(parents=True, exist_ok=True)
    return Workspace(scratch, None, False, False)


def _branch_exists(clone: Path, branch: str) -> bool:
    return (
        subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
            cwd=clone,
            capture_output=True,
            check=False,
        ).returncode
        == 0
    )


def _add_worktree(
    clone: Path, path: Path, target: str, sparse: list[str], new: bool = True
) -> None:
    """A worktree at PATH on branch TARGET (made at the clone's HEAD when it does not exist),
    or, with NEW false, detached at commit TARGET; only SPARSE's directories when given."""
    _git(["worktree", "prune"], cwd=clone)
    args = ["worktree", "add", "--quiet"] + (["--no-checkout"] if sparse else [])
    if not new:
        args += ["--detach", str(path), target]
    elif _branch_exists(clone, target):
        args += [str(path), target]
    else:
        args += ["-b", target, str(path)]
    _git(args, cwd=clone)
    if sparse:
        _git(["sparse-checkout", "set", "--cone", "--", *sparse], cwd=path)
        _git(["checkout", "--quiet"], cwd=path)


def _spare_path(config: Config, ref: WorkItemRef) -> Path:
    root = config.workspace_root
    return _inside(root, root / "_spare" / ref.host / ref.owner / ref.repo)


def _ready_note(spare: Path) -> Path:
    return spare.with_name(f"{spare.name}.ready")


@contextlib.contextmanager
def _locked(path: Path, wait: bool) -> Iterator[bool]:
    """An flock on PATH's lock file, held for the block; yields False when it is taken
    elsewhere and WAIT is false."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(f"{path.name}.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def _head(clone: Path) -> str:
    return _git(["rev-parse", "--verify", "HEAD^{commit}"], cwd=clone).strip()


def make_spare(config: Config, ref: WorkItemRef) -> bool:
    """Make REF's repository's spare worktree unless it is ready or being made; True when one
    was made. A half-made spare (a crash while making it) is removed first."""
    if not config.workspaces.enabled or ref.is_local:
        return False
    clone = clone_for(config, ref)
    spare = _spare_path(config, ref)
    with _locked(spare, wait=False) as mine:
        if not mine or _ready_note(spare).is_file():
            return False
        _drop(clone, spare)
        head, sparse = _head(clone), sparse_of(config, ref)
        _add_worktree(clone, spare, head, sparse, new=False)
        note = {"commit": head, "sparse": sparse}
        _ready_note(spare).write_text(json.dumps(note), encoding="utf-8")
        return True


def _spare_quietly(config: Config, ref: WorkItemRef) -> None:
    try:
        make_spare(config, ref)
    except (LoopError, OSError) as exc:  # the next spawn makes its worktree the plain way
        log.warning("no spare worktree for %s: %s", ref.full_name, exc)


def _drop(clone: Path, spare: Path) -> None:
    _ready_note(spare).unlink(missing_ok=True)
    if spare.exists():
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(spare)],
            cwd=clone,
            capture_output=True,
            check=False,
        )
        shutil.rmtree(spare, ignore_errors=True)


def _take_spare(config: Config, ref: WorkItemRef, clone: Path, path: Path, branch: str) -> bool:
    """Move REF's repository's ready spare to PATH on BRANCH; False when there is none to
    take (or it no longer fits: other sparse paths), and the caller makes the worktree. A
    ready spare is waited for while its lock is held: its maker writes the ready note last and
    lets go at once (another spawn taking it lets go as soon as it has moved it)."""
    spare = _spare_path(config, ref)
    note = _ready_note(spare)
    if not note.is_file():  # none, or one still being made: not waited for
        return False
    with _locked(spare, wait=True):
        if not note.is_file():  # another spawn took it meanwhile
            return False
        try:
            facts = json.loads(note.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            facts = {}
        note.unlink()
        if facts.get("sparse") != sparse_of(config, ref) or not (spare / ".git").is_file():
            _drop(clone, spare)
            return False
        _git(["worktree", "move", str(spare), str(path)], cwd=clone)
    if _branch_exists(clone, branch):  # the item's earlier work: check it out
        _git(["checkout", "--quiet", branch], cwd=path)
    elif facts.get("commit") == (head := _head(clone)):  # a new branch here: no file changes
        _git(["branch", branch, head], cwd=path)
        _git(["symbolic-ref", "-m", "the-loop: spare taken", "HEAD", f"refs/heads/{branch}"], path)
    else:  # the clone's HEAD moved since the spare was made: only the changed files are written
        _git(["checkout", "--quiet", "-b", branch, head], cwd=path)
    return True


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
    # The agent could write its worktree, its `.git` file included: git is never run in it, and
    # the clone is the one the configuration names, not the one that file names.
    clone = _existing_clone(config, ref)
    removed = False
    if clone is not None and (path / ".git").is_file():
        with contextlib.suppress(WorkspaceError):  # a `.git` that no longer names its admin dir
            _git(["-c", "core.fsmonitor=false", "worktree", "remove", "--force", str(path)], clone)
            removed = True
    if not removed:
        shutil.rmtree(path, ignore_errors=True)
        if clone is not None:
            _git(["worktree", "prune"], cwd=clone)
    _setup_marker(config, ref).unlink(missing_ok=True)
    return True


class WorktreesDisk(Wire):
    """The disk the work items' worktrees use (``the_loop.work_items.workspace.disk_usage``)."""

    worktrees: int
    """Work items' worktrees under the workspace root."""
    spares: int = 0
    """Ready spare worktrees (``workspaces.spare``), counted in ``bytes`` too."""
    bytes: int
    """Allocated bytes of the worktrees and spares (the shared clones not counted)."""
    measured_at: Timestamp


_disk: dict[Path, WorktreesDisk] = {}
_measuring: set[Path] = set()
_disk_lock = threading.Lock()


def disk_usage(config: Config, wait: bool = False) -> WorktreesDisk | None:
    """The disk the worktrees under the workspace root use (the clones not counted), at most
    ``DISK_MAX_AGE_SECONDS`` old. An older or missing figure is measured again in a thread
    (so status never waits on walking 100,000 files) and the one known is answered, None
    before the first; with WAIT the measurement is made before answering."""
    if not config.workspaces.enabled:
        return None
    root = config.workspace_root
    with _disk_lock:
        known = _disk.get(root)
        fresh = known is not None and time.time() - known.measured_at < DISK_MAX_AGE_SECONDS
        if fresh or (root in _measuring and not wait):
            return known
        _measuring.add(root)
    if wait:
        return _measure(root)
    threading.Thread(target=_measure, args=(root,), name="workspace-disk", daemon=True).start()
    return known


def _measure(root: Path) -> WorktreesDisk:
    try:
        worktrees = spares = used = 0
        seen: set[tuple[int, int]] = set()
        for top in _children(root):
            if top.name in ("_clones", ".setup-done") or not top.is_dir(follow_symlinks=False):
                continue
            if top.name == "_spare":
                spares += len(list(Path(top.path).glob("*/*/*.ready")))
            elif (Path(top.path) / ".git").exists():
                worktrees += 1
            used += _bytes_under(Path(top.path), seen)
        out = WorktreesDisk(worktrees=worktrees, spares=spares, bytes=used, measured_at=time.time())
        with _disk_lock:
            _disk[root] = out
        return out
    finally:
        with _disk_lock:
            _measuring.discard(root)


def _children(path: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return list(it)
    except OSError:
        return []


def _bytes_under(path: Path, seen: set[tuple[int, int]]) -> int:
    """Allocated bytes under PATH, each inode once, symlinks not followed."""
    total, stack = 0, [path]
    while stack:
        for entry in _children(stack.pop()):
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if (info.st_dev, info.st_ino) in seen:
                continue
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
    return total
