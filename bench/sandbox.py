"""Sandbox: what confinement adds to a spawn, and to a request through the egress proxy.

- **spawn**: from ``TmuxRunner.spawn`` to the harness running (it creates a file in its tree;
  polled every 0.5 ms), without the sandbox and with it (``bwrap`` built by
  ``the_loop.runner.sandbox``, the layout of a real agent: system read-only, state dir, home,
  /tmp, /run hidden, tree and home read-write, own PID/IPC/UTS/user/network namespaces),
  alternating, in one run. SPEC §13: ≤ 30 ms more at p50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from common import Figure, Report

from the_loop.config import Config
from the_loop.runner import sandbox
from the_loop.runner.tmux import TmuxRunner


def _spawn_ms(runner: TmuxRunner, root: Path, confined: bool) -> float:
    tree = root / f"tree-{uuid.uuid4().hex[:8]}"
    tree.mkdir()
    marker = tree / "ran"
    argv = ["sh", "-c", f"touch '{marker}'; exec sleep 30"]
    if confined:
        config = Config(stateDir=root / "state")
        home = root / "state" / "homes" / tree.name
        home.mkdir(parents=True)
        layout = sandbox.layout_for(
            config, state_dir=root / "state", config_file=None, tree=tree, home=home,
            argv=argv, env={},
        )  # fmt: skip
        layout.network = "none"
        argv = sandbox.wrap(layout, argv)
    target = f"loop-bench-{tree.name}"
    start = time.perf_counter()
    runner.spawn(target, argv, cwd=tree).unwrap()
    while not marker.exists():
        time.sleep(0.0005)
    elapsed = (time.perf_counter() - start) * 1000
    runner.kill_session(target)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    report = Report(
        "sandbox",
        "Sandbox",
        "spawn to harness running, with and without bwrap, alternating in one run",
    )
    works, why = sandbox.bwrap_works()
    if not works:
        report.note(f"bubblewrap unavailable: {why}")
        report.finish()
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runner = TmuxRunner(f"bench-sbx-{os.getpid()}", work_dir=root / "run")
        plain: list[float] = []
        boxed: list[float] = []
        try:
            _spawn_ms(runner, root, False)  # the server's start is not a spawn
            for _ in range(args.runs):
                plain.append(_spawn_ms(runner, root, False))
                boxed.append(_spawn_ms(runner, root, True))
        finally:
            runner.kill_server()
    p50_plain, p50_boxed = statistics.median(plain), statistics.median(boxed)
    report.figure(Figure("sandbox.spawn.none.p50", "spawn, no sandbox, p50", p50_plain, "ms"))
    report.figure(Figure("sandbox.spawn.bwrap.p50", "spawn, bwrap, p50", p50_boxed, "ms"))
    report.figure(
        Figure(
            "sandbox.spawn.added.p50",
            "spawn: added by the sandbox, p50",
            p50_boxed - p50_plain,
            "ms",
            30,
        )
    )
    print(
        f"spawn p50: none {p50_plain:.1f} ms, bwrap {p50_boxed:.1f} ms, "
        f"added {p50_boxed - p50_plain:.1f} ms (target <= 30 ms)"
    )
    report.finish()


if __name__ == "__main__":
    main()
