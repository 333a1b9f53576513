"""Idle cost: the daemon's and the tmux server's CPU with many live, idle agents.

N authorized starts are posted back to back to a daemon running the fake agent (read from its
screen: the ``command`` harness has no hooks, so it is the screen detector's costliest case),
and the benchmark waits until every agent took its first prompt, the inbox and outbox are
empty and every agent is ``waiting`` (its screen quiet for ``attention.quietSeconds``), then
2 s more. It then reads
``utime + stime`` of the daemon's process and of the tmux server's process from
``/proc/<pid>/stat`` at the start and the end of a window (``--seconds``, 60 by default) and
prints each one's share of one core over that window: CPU time consumed, not a wall-clock
rate, so other work on the machine does not count (the load average is printed beside). The
``dd`` processes that carry each pane's output to the daemon (decision 0059; ``cat`` before
2026-12-04) are summed apart. Nothing happens meanwhile: the figure is what live sessions cost
by merely existing (SPEC §13: ≤ 1 % of a core together at 200), for 10, 50 and 200 live agents.

``--profile DIR`` runs the daemon under ``bench/profiled.py`` instead (every thread profiled
over the same window; the profiler itself costs CPU, so the share printed then is inflated)
and prints where the window went: the calls of each periodic pass and the top functions.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import signal
import sqlite3
import time
from pathlib import Path

import common
import live
from common import PYTHON, Figure, Report

NAME = "idle"
PASSES = (
    "attention_pass",
    "spend_pass",
    "apply_spool",
    "checkpoint",
    "reconcile_once",
    "step",
    "next_due",
    "claim_next",
    "pass_once",
    "_stamp",
    "beat",
    "_run",
)
"""Entry points of the daemon's background work, counted in a profile (``--profile``)."""


def pipes_of(server: int) -> list[int]:
    """The ``dd`` processes the tmux server runs for ``pipe-pane`` (its children)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        name, rest = stat.split("(", 1)[1].rsplit(")", 1)
        if name == "dd" and int(rest.split()[1]) == server:
            found.append(int(entry.name))
    return found


def _sum_cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += common.cpu_seconds(pid)
        except OSError:
            continue
    return total


def shares(pids: dict[str, list[int]], seconds: float) -> dict[str, float]:
    """Each group of PIDS' share of one core over a window of SECONDS (utime + stime)."""
    t0 = time.monotonic()
    start = {name: _sum_cpu(group) for name, group in pids.items()}
    common.wait_until(lambda: time.monotonic() - t0 >= seconds, timeout=seconds + 5, interval=0.5)
    spent = time.monotonic() - t0
    return {name: (_sum_cpu(group) - start[name]) / spent for name, group in pids.items()}


COUNTERS = {
    "captures": "the_loop_tmux_pane_captures_total",
    "tmux commands": "the_loop_tmux_commands_total",
    "attention passes": 'the_loop_task_passes_total{task="attention"}',
    "spend passes": 'the_loop_task_passes_total{task="spend"}',
    "reconciler passes": 'the_loop_task_passes_total{task="reconciler"}',
}
"""What the daemon counts (``/metrics``) and the window reports: its wake-ups and tmux use."""


def counters(lv: live.Live) -> dict[str, int]:
    """The daemon's COUNTERS now (-1: not counted by this daemon)."""
    _, body = common.http_get(lv.daemon.host, lv.daemon.port, "/metrics", lv.daemon.token)
    values = dict(line.rsplit(" ", 1) for line in body.decode().splitlines() if " " in line)
    return {name: int(float(values.get(metric, "-1"))) for name, metric in COUNTERS.items()}


def wait_quiet(lv: live.Live, count: int) -> None:
    """Until every agent is ``waiting`` (its screen quiet for ``attention.quietSeconds``), then
    2 s more for the passes that follow the last change."""
    db = sqlite3.connect(f"file:{lv.install.state_dir / 'the-loop.db'}?mode=ro", uri=True)
    sql = "SELECT COUNT(*) FROM attention WHERE state = 'waiting'"
    try:
        common.wait_until(
            lambda: db.execute(sql).fetchone()[0] >= count, timeout=600, what="every agent waiting"
        )
    finally:
        db.close()
    t0 = time.monotonic()
    common.wait_until(lambda: time.monotonic() - t0 >= 2, timeout=10, interval=0.2)


def measure(count: int, seconds: float, profile: Path | None = None) -> dict[str, float]:
    launcher = None
    out = None
    if profile is not None:
        profile.mkdir(parents=True, exist_ok=True)
        out = profile / f"daemon-{count}.pstats"
        out.unlink(missing_ok=True)
        launcher = [PYTHON, str(common.BENCH / "profiled.py"), str(out)]
    # unconfined, as the tests run it: the fake agent writes its records outside its tree
    with live.Live.start(
        f"{NAME}-{count}", max_sessions=count + 50, launcher=launcher, sandbox={"mode": "none"}
    ) as lv:
        with common.step(f"{count} starts posted back to back"):
            lv.burst_spawn(count)
            lv.wait_idle(timeout=600)
        server = int(lv.install.tmux("display-message", "-p", "#{pid}").stdout.strip())
        wait_quiet(lv, count)
        before = counters(lv)
        if out is not None:
            os.kill(lv.daemon.pid, signal.SIGUSR2)  # the profile's window starts
        groups = {"daemon": [lv.daemon.pid], "tmux": [server], "pipes": pipes_of(server)}
        got = shares(groups, seconds)
        after = counters(lv)
        for name, value in after.items():
            got[name] = value - before[name] if before[name] >= 0 else -1
        got["pipe_count"] = len(groups["pipes"])
        if out is not None:
            os.kill(lv.daemon.pid, signal.SIGUSR2)  # ... and ends: written to OUT
            common.wait_until(out.exists, timeout=30, what="the daemon's profile")
        print(
            f"{count} live idle agents over {seconds:g}s: daemon {got['daemon']:.2%}, "
            f"tmux server {got['tmux']:.2%}, together {got['daemon'] + got['tmux']:.2%} of a core; "
            f"{got['pipe_count']:.0f} pipe-pane cats {got['pipes']:.3%}; in the window "
            + ", ".join(f"{name} {got[name]:.0f}" for name in COUNTERS)
            + " (-1: not counted)",
            flush=True,
        )
    if out is not None:
        print_profile(out, seconds)
    return got


def print_profile(path: Path, seconds: float) -> None:
    """The calls and time of each pass in PATH's window, then the top functions."""
    stats = pstats.Stats(str(path))
    print(f"-- profile of the daemon over {seconds:g}s ({path})")
    rows = stats.stats  # type: ignore[attr-defined]
    for (filename, line, func), (_, ncalls, _tt, cumtime, _) in sorted(
        rows.items(), key=lambda kv: -kv[1][3]
    ):
        if func in PASSES and "the_loop" in filename:
            where = filename.split("the_loop/", 1)[-1]
            print(
                f"  {where}:{line} {func}: {ncalls} calls ({ncalls / seconds:.2f}/s), "
                f"{cumtime * 1000:.0f} ms"
            )
    text = io.StringIO()
    pstats.Stats(str(path), stream=text).sort_stats("tottime").print_stats(25)
    print(text.getvalue())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="10,50,200")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--profile", type=Path, help="profile the daemon; stats into this dir")
    args = parser.parse_args()
    report = Report(NAME, "Idle cost of live agents", __doc__ or "")
    for count in [int(c) for c in args.counts.split(",")]:
        got = measure(count, args.seconds, args.profile)
        together = (got["daemon"] + got["tmux"]) * 100
        report.note(
            f"{count} live idle agents: daemon {got['daemon']:.2%} + tmux server "
            f"{got['tmux']:.2%} of a core over {args.seconds:g}s (/proc/<pid>/stat); "
            f"{got['pipe_count']:.0f} pipe-pane `dd`s {got['pipes']:.3%}; in the window "
            + ", ".join(f"{name} {got[name]:.0f}" for name in COUNTERS)
            + (" (profiled: inflated)" if args.profile else "")
        )
        target = 1.0 if count == 200 else None
        report.figure(
            Figure(f"idle.cpu.{count}", f"idle CPU, {count} live agents (daemon + tmux)",
                   together, "% core", target)
        )  # fmt: skip
    if args.profile is None:  # a profiled run's shares are inflated: not saved as results
        report.finish()


if __name__ == "__main__":
    main()
