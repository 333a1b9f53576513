"""`the-loop prune` (issue 28): the dead panes and worktrees of sessions closed before the
cutoff go; a live session's pane and worktree, and anything newer, stay."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.fakes import payloads as P
from tests.work import Work


def git_clone(root: Path) -> Path:
    """A local repository to make worktrees from (workspaces.repos)."""
    clone = root / "clone"
    clone.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "start"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=clone,
            check=True,
        )
    return clone


def test_prune_removes_closed_panes_and_worktrees_by_age(work: Work) -> None:
    clone = git_clone(work.env.root)
    work.configure(workspaces={"enabled": True, "repos": {"octo/repo": str(clone)}})
    for number in (1, 2):
        r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start", number=number))
        assert "spawned" in r.stdout, r.stdout + r.stderr
    assert work.env.run("sessions", "close", "octo/repo#1").exit_code == 0
    root = work.env.state_dir / "workspaces"
    assert (root / "github-octo-repo-1").is_dir() and (root / "github-octo-repo-2").is_dir()
    assert work.pane_dead("loop-github-octo-repo-1") == "1"

    recent = work.env.run("prune", "--older-than", "1h")
    assert recent.exit_code == 0 and "nothing closed before 1h ago" in recent.stdout, recent

    planned = work.env.run("prune", "--older-than", "0s", "--dry-run", "--format", "json")
    assert json.loads(planned.stdout)["panes"] == ["github:octo/repo#1"], planned.stdout
    assert work.pane_dead("loop-github-octo-repo-1") == "1"  # a dry run removes nothing

    done = work.env.run("prune", "--older-than", "0s")
    assert done.exit_code == 0, done.stderr
    assert done.stdout.splitlines() == [
        "removed the closed pane of github:octo/repo#1",
        "removed the worktree of github:octo/repo#1",
    ], done.stdout
    assert work.tmux("has-session", "-t", "=loop-github-octo-repo-1").returncode != 0
    assert not (root / "github-octo-repo-1").exists()
    assert work.pane_dead("loop-github-octo-repo-2") == "0"  # the live one is untouched
    assert (root / "github-octo-repo-2").is_dir()
    assert work.events("prune.done")


def test_prune_refuses_a_bad_age(work: Work) -> None:
    bad = work.env.run("prune", "--older-than", "soon")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: "), bad
