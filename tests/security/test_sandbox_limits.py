"""Per-agent limits (``sandbox.pids``, ``sandbox.memoryMb``) with real bubblewrap, real tmux,
the real daemon and the kernel's own cgroups: a confined agent that forks past its pids limit
is refused the forks, one that allocates past its memory limit is killed, it cannot raise its
own limit, and the daemon (outside the agent's cgroups) goes on answering. Without the limits
the same agent forks and allocates all it asks for (so each check can fail)."""

from __future__ import annotations

import sys

import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.confine import agent_hash
from the_loop.runner import limits

pytestmark = pytest.mark.bwrap

FORKS = """
import os, sys, time
n, why = 0, "none"
for _ in range(40):
    try:
        pid = os.fork()
    except OSError as exc:
        why = exc.strerror.replace(" ", "-")
        break
    if pid == 0:
        time.sleep(2)
        os._exit(0)
    n += 1
print(f"forked:{n} refused:{why}")
"""
ALLOC = "blob = b'x' * (256 << 20); print('allocated:yes')"
PROBE = """
cd '{tree}'
{{
'{python}' forks.py
'{python}' -c "{alloc}"; echo "alloc-exit:$?"
for f in {limit_files}; do
  if echo 100000 > "$f" 2>/dev/null; then echo "raised:$f"; fi
done
echo "done:yes"
}} > out.tmp 2>/dev/null
mv out.tmp out.txt
echo probed
exec sleep 600
"""


def run_agent(work: Work, sandbox: dict[str, object]) -> tuple[dict[str, str], Daemon]:
    """Start a standing agent that forks 40 children and allocates 256 MiB under SANDBOX;
    return what it saw and the (still running) daemon."""
    env = work.env
    tree = env.root / "tree"
    tree.mkdir()
    (tree / "forks.py").write_text(FORKS)
    group = limits.group_name(env.state_dir, agent_hash("standing:hog"))
    files = []
    for name in ("memory", "pids"):
        found, _ = limits.controller(name)
        if found is not None:
            files.append(str(found.parent / group / limits.limit_file(found)))
    script = tree / "probe.sh"
    script.write_text(
        PROBE.format(
            tree=tree, python=sys.executable, alloc=ALLOC, limit_files=" ".join(files) or "none"
        )
    )
    env.write_config(
        harnesses={"hog": {"adapter": "command", "interactive": ["sh", str(script)]}},
        routing={"defaultHarness": "hog"},
        standing={
            "enabled": True,
            "sessions": [{"name": "hog", "cwd": str(tree), "autoStart": False}],
        },
        sandbox={"mode": "bwrap", "network": "none", **sandbox},
    )
    daemon = Daemon(work)
    daemon.start()
    started = env.run("standing", "start", "hog")
    assert started.exit_code == 0, started.stdout + started.stderr
    out = tree / "out.txt"
    wait_until(out.exists, 60, what="the agent's report")
    seen = dict(w.split(":", 1) for w in out.read_text().split() if ":" in w)
    return seen, daemon


def test_a_confined_agent_is_held_to_its_pids_and_memory(work: Work) -> None:
    memory, _ = limits.controller("memory")
    pids, _ = limits.controller("pids")
    if memory is None or pids is None:
        pytest.skip("; ".join(limits.describe(64, 16)))
    seen, daemon = run_agent(work, {"pids": 16, "memoryMb": 64})
    try:
        assert int(seen["forked"]) < 16 and seen["refused"] != "none", seen
        assert seen["alloc-exit"] == "137", seen  # SIGKILL: the cgroup's OOM killer
        assert "raised" not in seen, seen  # its own limit is out of its reach
        assert daemon.api("GET", "/health").status_code == 200  # the daemon goes on
        group = limits.group_name(work.env.state_dir, agent_hash("standing:hog"))
        own = (memory.parent / group / "cgroup.procs").read_text().split()
        assert own, "the agent's processes are in its cgroup"
        assert daemon.proc is not None and str(daemon.proc.pid) not in own
        doctor = work.env.run("doctor")
        assert "memoryMb 64 by cgroup" in doctor.stdout, doctor.stdout
        assert "pids 16 by cgroup" in doctor.stdout, doctor.stdout
    finally:
        work.env.run("standing", "stop", "hog")
        daemon.stop()

    def swept() -> bool:
        limits.sweep(work.env.state_dir)  # as the daemon does when it stops
        return not (memory.parent / group).exists()

    wait_until(swept, 10, what="the agent's cgroup removed once it is empty")


def test_without_limits_the_same_agent_forks_and_allocates_all(work: Work) -> None:
    seen, daemon = run_agent(work, {})
    try:
        assert seen["forked"] == "40" and seen["refused"] == "none", seen
        assert seen["alloc-exit"] == "0", seen
    finally:
        work.env.run("standing", "stop", "hog")
        daemon.stop()


def test_doctor_says_limits_do_not_hold_unconfined_agents(work: Work) -> None:
    work.env.write_config(sandbox={"mode": "none", "memoryMb": 512, "pids": 64})
    doctor = work.env.run("doctor")
    assert "memoryMb/pids not enforced: they apply to confined agents only" in doctor.stdout, (
        doctor.stdout
    )
