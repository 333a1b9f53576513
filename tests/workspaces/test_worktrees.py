"""Worktrees for real repositories (issue 31): one clone per repository whose objects every
worktree shares, sparse paths, and a spare worktree the next spawn takes ready."""

from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from pathlib import Path

from tests.helpers import wait_until
from the_loop.config import Config
from the_loop.refs import WorkItemRef
from the_loop.work_items import workspace

ONE, TWO, THREE = (WorkItemRef("octo", "repo", n) for n in (1, 2, 3))
GIT_ID = ["-c", "user.name=t", "-c", "user.email=t@example.com"]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *GIT_ID, *args], cwd=cwd, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def make_repo(path: Path) -> Path:
    """A small repository: top.txt, src/a.py, src/deep/b.py, docs/guide.md."""
    for name, text in {
        "top.txt": "top\n",
        "src/a.py": "a = 1\n",
        "src/deep/b.py": "b = 2\n",
        "docs/guide.md": "# guide\n",
    }.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(text)
    git(path, "init", "-q", "-b", "main")
    git(path, "add", ".")
    git(path, "commit", "-q", "-m", "start")
    return path


def config_for(tmp_path: Path, **workspaces: object) -> Config:
    section = {"enabled": True, "repos": {"octo/repo": str(tmp_path / "clone")}, **workspaces}
    return Config.model_validate({"stateDir": str(tmp_path / "state"), "workspaces": section})


def files_of(path: Path) -> set[str]:
    return {
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(path).parts
    }


def spare_ready(config: Config) -> bool:
    return (config.workspace_root / "_spare" / "github.com" / "octo" / "repo.ready").is_file()


def test_worktrees_share_the_objects_of_one_clone_made_once(tmp_path: Path) -> None:
    remote = make_repo(tmp_path / "remotes" / "octo" / "repo")
    config = Config.model_validate(
        {
            "stateDir": str(tmp_path / "state"),
            "workspaces": {
                "enabled": True,
                "spare": False,
                "cloneUrl": str(tmp_path / "remotes") + "/{owner}/{repo}",
            },
        }
    )
    first = workspace.prepare(config, ONE)
    clone = config.workspace_root / "_clones" / "github.com" / "octo" / "repo"
    assert (clone / ".git").is_dir() and files_of(clone) == set()  # no checkout of its own
    os.rename(remote, tmp_path / "gone")  # the second worktree must not clone again
    second = workspace.prepare(config, TWO)
    for ws in (first, second):
        assert (ws.path / ".git").is_file()  # a worktree: no object store of its own
        common = git(ws.path, "rev-parse", "--path-format=absolute", "--git-common-dir")
        assert Path(common) == clone / ".git"
        assert files_of(ws.path) == {"top.txt", "src/a.py", "src/deep/b.py", "docs/guide.md"}
    (first.path / "new.txt").write_text("shared\n")
    git(first.path, "add", "new.txt")
    git(first.path, "commit", "-q", "-m", "work")
    made = git(first.path, "rev-parse", "HEAD")
    assert git(second.path, "cat-file", "-t", made) == "commit"  # one object store


def test_sparse_paths_check_out_only_the_listed_directories(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, sparse={"octo/repo": ["src/deep"]})
    plain = workspace.prepare(config, ONE)
    assert not plain.from_spare
    wait_until(lambda: spare_ready(config), what="a spare")
    taken = workspace.prepare(config, TWO)
    assert taken.from_spare
    for ws in (plain, taken):
        # cone mode: the listed directory whole, and the files of the directories above it
        assert files_of(ws.path) == {"top.txt", "src/a.py", "src/deep/b.py"}
        assert git(ws.path, "sparse-checkout", "list") == "src/deep"
        assert git(ws.path, "status", "--porcelain") == ""
    other = WorkItemRef("octo", "other", 1)
    assert workspace.sparse_of(config, other) == []  # a repository not listed: every file


def test_the_next_spawn_takes_the_spare_and_a_new_one_is_made(tmp_path: Path) -> None:
    clone = make_repo(tmp_path / "clone")
    config = config_for(tmp_path)
    first = workspace.prepare(config, ONE)
    assert first.created and not first.from_spare  # nothing to take yet
    wait_until(lambda: spare_ready(config), what="the spare made after the first spawn")
    spare = config.workspace_root / "_spare" / "github.com" / "octo" / "repo"
    (spare / "made-ahead").write_text("")  # only the spare has it: taken means moved

    second = workspace.prepare(config, TWO)
    assert second.created and second.from_spare
    assert (second.path / "made-ahead").is_file()  # moved, not checked out again
    assert git(second.path, "branch", "--show-current") == "the-loop/github-octo-repo-2"
    assert git(second.path, "status", "--porcelain", "--untracked-files=no") == ""
    wait_until(lambda: spare_ready(config), what="a new spare after the take")
    # listed once that spare is made: `git worktree list` can fail (exit 128) while another
    # worktree is being added beside it (seen once in a fresh clone's run)
    listed = git(clone, "worktree", "list", "--porcelain")
    assert f"worktree {second.path}" in listed
    assert not (spare / "made-ahead").exists() and (spare / "src" / "a.py").is_file()

    (clone / "top.txt").write_text("newer\n")  # the clone's HEAD moves after the spare was made
    git(clone, "commit", "-q", "-am", "newer")
    third = workspace.prepare(config, THREE)
    assert third.from_spare
    assert (third.path / "top.txt").read_text() == "newer\n"
    assert git(third.path, "rev-parse", "HEAD") == git(clone, "rev-parse", "HEAD")


def test_a_reopened_item_taking_the_spare_gets_its_own_branch_back(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path)
    ws = workspace.prepare(config, ONE)
    (ws.path / "work.txt").write_text("mine\n")
    git(ws.path, "add", "work.txt")
    git(ws.path, "commit", "-q", "-m", "mine")
    assert workspace.remove(config, ONE)
    wait_until(lambda: spare_ready(config), what="a spare")
    again = workspace.prepare(config, ONE)
    assert again.from_spare
    assert git(again.path, "branch", "--show-current") == "the-loop/github-octo-repo-1"
    assert (again.path / "work.txt").read_text() == "mine\n"


def test_a_ready_spare_is_taken_while_its_maker_still_holds_its_lock(tmp_path: Path) -> None:
    """The maker writes the ready note last, inside its lock: a spawn in that moment waits for
    the lock and takes the spare, not a worktree made the plain way (a fresh clone's run
    missed the spare so once)."""
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path)
    workspace.prepare(config, ONE)
    wait_until(lambda: spare_ready(config), what="a spare")
    lock = config.workspace_root / "_spare" / "github.com" / "octo" / "repo.lock"
    taken: list[workspace.Workspace] = []
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the maker holds it, its note written
        spawn = threading.Thread(target=lambda: taken.append(workspace.prepare(config, TWO)))
        spawn.start()
        wait_until(lambda: waiting_on(lock), what="the spawn waiting for the spare's lock")
    finally:
        os.close(fd)
    spawn.join(30)
    assert taken and taken[0].from_spare


def waiting_on(path: Path) -> bool:
    """Whether some process waits for a lock on PATH (a ``->`` line of ``/proc/locks``)."""
    inode = f":{path.stat().st_ino} "
    return any(
        "->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines()
    )


def test_without_spare_no_spare_is_made(tmp_path: Path) -> None:
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, spare=False)
    workspace.prepare(config, ONE)
    assert not workspace.prepare(config, TWO).from_spare
    assert not (config.workspace_root / "_spare").exists()


def test_removal_never_runs_git_where_the_agents_git_file_points(tmp_path: Path) -> None:
    """An agent can rewrite its worktree's `.git` to name a git dir of its own making, whose
    config runs a command (core.fsmonitor): removing the worktree runs nothing of it, removes
    the tree anyway, and leaves the clone's list of worktrees clean."""
    make_repo(tmp_path / "clone")
    config = config_for(tmp_path, spare=False)
    ws = workspace.prepare(config, ONE)
    planted = ws.path / "own-git"
    subprocess.run(["git", "init", "-q", str(planted)], check=True, capture_output=True)
    ran = tmp_path / "ran-as-the-daemon"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\ntouch {ran}\n")
    hook.chmod(0o755)
    git(planted, "config", "core.fsmonitor", str(hook))
    (ws.path / ".git").write_text(f"gitdir: {planted / '.git'}\n")

    assert workspace.remove(config, ONE)

    assert not ran.exists()
    assert not ws.path.exists()
    assert str(ws.path) not in git(tmp_path / "clone", "worktree", "list")
