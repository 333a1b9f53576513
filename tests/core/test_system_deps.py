"""`make run` installs only what running needs; `make test` adds the test suite's packages
(issue 28). The dependency script is run with a PATH that has tmux, git, npm and ps but no
chromium or strace: for running it wants nothing (so `make run` goes on to start), for the
tests it names what is missing. Nothing is installed (`--dry-run`, or nothing missing)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

SCRIPT = REPO / "scripts" / "system-deps.sh"
RUNNING = ["bash", "tmux", "git", "npm", "node", "ps", "id", "bwrap"]


@pytest.fixture
def bare_path(tmp_path: Path) -> str:
    """A PATH holding only what running needs (no chromium, strace or initdb; bwrap is one)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in RUNNING:
        found = shutil.which(name)
        assert found is not None, f"{name} is not installed here"
        (bin_dir / name).symlink_to(found)
    return str(bin_dir)


def deps(path: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "THE_LOOP_SKIP_BROWSER"}
    env["PATH"] = path
    return subprocess.run(
        [shutil.which("bash") or "/bin/bash", str(SCRIPT), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_running_needs_no_test_packages(bare_path: str) -> None:
    dry = deps(bare_path, "run", "--dry-run")
    assert dry.returncode == 0 and dry.stdout.strip() == "nothing to install for run", dry
    real = deps(bare_path, "run")  # nothing missing: it installs nothing and lets make go on
    assert real.returncode == 0 and real.stdout == "" and real.stderr == "", real


def test_the_tests_name_the_missing_test_packages(bare_path: str) -> None:
    dry = deps(bare_path, "test", "--dry-run")
    assert dry.returncode == 0, dry
    assert dry.stdout.startswith("would install for test:"), dry.stdout
    wanted = dry.stdout.split(":", 1)[1].split()
    assert "strace" in wanted and "tmux" not in wanted, wanted
    if (REPO / "tests" / "browser_required").is_file():
        assert "chromium" in wanted, wanted


def test_bad_arguments_are_refused(bare_path: str) -> None:
    bad = deps(bare_path, "everything")
    assert bad.returncode == 2 and "usage:" in bad.stderr, bad


def test_make_run_asks_for_running_and_make_test_for_the_tests_too() -> None:
    def planned(target: str) -> str:
        done = subprocess.run(
            ["make", "-n", target], capture_output=True, text=True, cwd=REPO, timeout=60
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    run = planned("run")
    assert "scripts/system-deps.sh run" in run and "system-deps.sh test" not in run, run
    test = planned("test")
    assert "scripts/system-deps.sh run" in test and "scripts/system-deps.sh test" in test, test
    check = planned("check")  # what CI runs: the tests and the checks, the same installs
    assert "scripts/system-deps.sh test" in check and "lint-imports" in check, check
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "make check" in ci
