"""The ``pids`` limit without a pids cgroup (docs/decisions/0062): ``RLIMIT_NPROC`` set inside
an agent's own user namespace (``limits.inside``) is counted for that sandbox alone. With real
bubblewrap as an unprivileged user (the daemon user this fallback is for): a sandbox at its
limit is refused the next fork while a second sandbox of the same user, at the same moment,
forks all it may — and without the rlimit the first forks all it asks (the test can fail)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from the_loop.runner import limits

pytestmark = [
    pytest.mark.bwrap,
    pytest.mark.skipif(shutil.which("prlimit") is None, reason="no prlimit"),
    pytest.mark.skipif(
        os.getuid() == 0 and shutil.which("setpriv") is None, reason="no setpriv to drop root"
    ),
]

PYTHON = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
"""The system's Python (an unprivileged user may run it; the suite's may live in root's home)."""
FORKS = """
import os, sys, time
n, why = 0, "none"
for _ in range(int(sys.argv[1])):
    try:
        pid = os.fork()
    except OSError as exc:
        why = exc.strerror.replace(" ", "-")
        break
    if pid == 0:
        time.sleep(float(sys.argv[2]))
        os._exit(0)
    n += 1
print(f"forked:{n} refused:{why}", flush=True)
time.sleep(float(sys.argv[2]))
"""


def sandboxed(nproc: int | None, forks: int, hold: float) -> list[str]:
    """A sandbox (own user and PID namespaces) forking FORKS children that live HOLD s."""
    unprivileged = []
    if os.getuid() == 0:  # as root the kernel does not count: run as nobody, as a user would
        unprivileged = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    inner = limits.inside([PYTHON, "-I", "-c", FORKS, str(forks), str(hold)],
                          limits.Plan(nproc=nproc))  # fmt: skip
    box = ["bwrap", "--die-with-parent", "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/"]
    return [*unprivileged, *box, "--dev", "/dev", "--proc", "/proc", "--chdir", "/", *inner]


def result(line: str) -> dict[str, str]:
    return dict(word.split(":", 1) for word in line.split())


def test_rlimit_nproc_holds_one_sandbox_and_not_its_neighbour() -> None:
    holding = subprocess.Popen(sandboxed(8, 30, 20), stdout=subprocess.PIPE, text=True)
    try:
        assert holding.stdout is not None
        first = result(holding.stdout.readline())
        assert int(first["forked"]) < 8 and first["refused"] != "none", first
        neighbour = subprocess.run(
            sandboxed(8, 4, 0.1), capture_output=True, text=True, timeout=30, check=False
        )
        second = result(neighbour.stdout)
        assert second == {"forked": "4", "refused": "none"}, (second, neighbour.stderr)
    finally:
        holding.kill()
        holding.wait()


def test_without_the_rlimit_the_sandbox_forks_all() -> None:
    done = subprocess.run(
        sandboxed(None, 30, 0.1), capture_output=True, text=True, timeout=30, check=False
    )
    assert result(done.stdout) == {"forked": "30", "refused": "none"}, done.stderr
