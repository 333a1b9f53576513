"""A confined agent in a git worktree of a shared clone (SPEC §18, docs/decisions/0062) commits
on its own branch, and cannot alter what is not its own in the clone's git dir: the clone's
``config`` and ``hooks`` (which other git commands, the daemon's included, would run),
another session's worktree (its admin dir, its files), a branch outside its branch's folder.
Unconfined (``sandbox.mode: none``) every one of those succeeds (the test can fail)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.work import Work
from the_loop.runner.sandbox import git_dirs

pytestmark = pytest.mark.bwrap

PROBE = r"""
check() { if eval "$2" >/dev/null 2>&1; then echo "$1:OPEN"; else echo "$1:DENIED"; fi; }
{
check own-commit "git commit -q --allow-empty -m inside"
check clone-config "git config core.fsmonitor 'touch {root}/pwned'"
check clone-hook "echo 'touch {root}/pwned' > '{common}/hooks/post-checkout'"
check other-admin "echo ref: refs/heads/main > '{common}/worktrees/other/HEAD'"
check other-files "touch '{root}/other/planted'"
check main-branch "git update-ref refs/heads/main HEAD"
check packed-refs "echo x >> '{common}/packed-refs'"
} > probe.out 2>&1
mv probe.out probe.txt
echo probed
exec sleep 600
"""
CLOSED = {"clone-config", "clone-hook", "other-admin", "other-files", "main-branch"}
CLOSED |= {"packed-refs"}


def git(*args: str, cwd: Path, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)
    return done.stdout.strip()


def probe(work: Work, mode: str) -> tuple[dict[str, str], Path]:
    root = work.env.root
    repo = root / "repo"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("config", "user.email", "t@example.org", cwd=repo)
    git("config", "user.name", "t", cwd=repo)
    git("commit", "-q", "--allow-empty", "-m", "first", cwd=repo)
    git("pack-refs", "--all", cwd=repo)
    for name in ("mine", "other"):
        git("worktree", "add", "-q", "-b", f"the-loop/{name}", str(root / name), cwd=repo)
    tree, common = root / "mine", repo / ".git"
    script = tree / "probe.sh"
    script.write_text(PROBE.replace("{root}", str(root)).replace("{common}", str(common)))
    work.env.write_config(
        harnesses={"probe": {"adapter": "command", "interactive": ["sh", str(script)]}},
        routing={"defaultHarness": "probe"},
        standing={
            "enabled": True,
            "sessions": [{"name": "probe", "cwd": str(tree), "autoStart": False}],
        },
        sandbox={"mode": mode, "network": "none"},
    )
    daemon = Daemon(work)
    daemon.start()
    try:
        started = work.env.run("standing", "start", "probe")
        assert started.exit_code == 0, started.stdout + started.stderr
        out = tree / "probe.txt"
        wait_until(out.exists, 60, what="the probe's results")
        results = dict(line.split(":", 1) for line in out.read_text().split() if ":" in line)
    finally:
        work.env.run("standing", "stop", "probe")
        daemon.stop()
    return results, repo


def test_a_confined_agent_commits_on_its_branch_and_alters_nothing_else(work: Work) -> None:
    results, repo = probe(work, "bwrap")
    assert results["own-commit"] == "OPEN", results
    assert {k for k, v in results.items() if v == "DENIED"} == CLOSED, results
    assert git("log", "-1", "--format=%s", "the-loop/mine", cwd=repo) == "inside"  # seen outside
    assert git("config", "--get", "core.fsmonitor", cwd=repo, check=False) == ""
    assert not (repo / ".git" / "hooks" / "post-checkout").exists()


def test_unconfined_the_same_git_writes_succeed(work: Work) -> None:
    results, _ = probe(work, "none")
    assert {k for k, v in results.items() if v == "OPEN"} >= CLOSED | {"own-commit"}, results


def test_a_rewritten_git_file_binds_nothing(work: Work) -> None:
    """The ``.git`` file is in the agent's tree: pointed at a directory of the operator's
    (or at another session's admin dir), it does not make that directory writable."""
    root = work.env.root
    repo, tree, private = root / "repo", root / "mine", root / "operator-private"
    repo.mkdir()
    git("init", "-q", "-b", "main", cwd=repo)
    git("-c", "user.email=t@e", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x",
        cwd=repo)  # fmt: skip
    for name in ("mine", "other"):
        git("worktree", "add", "-q", "-b", f"the-loop/{name}", str(root / name), cwd=repo)
    read_only, writable = git_dirs(tree)
    assert read_only == [repo / ".git"] and repo / ".git" / "worktrees" / "mine" in writable
    private.mkdir()
    for target in (private, repo / ".git" / "worktrees" / "other"):
        (tree / ".git").write_text(f"gitdir: {target}\n")
        assert git_dirs(tree) == ([], []), target
