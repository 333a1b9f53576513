"""Idle cost: the daemon's and the tmux server's CPU with many live, idle agents.

N authorized starts are posted back to back to a daemon running the fake agent (read from its
screen: the ``command`` harness has no hooks, so it is the screen detector's costliest case),
and the benchmark waits until every agent took its first prompt, the inbox and outbox are
empty and the screens have gone quiet (``attention.quietSeconds`` and more). It then reads
``utime + stime`` of the daemon's process and of the tmux server's process from
``/proc/<pid>/stat`` at the start and the end of a window (``--seconds``, 20 by default) and
prints each one's share of one core over that window. Nothing happens meanwhile: the figure is
what live sessions cost by merely existing (SPEC §13: ≤ 1 % of a core together at 200).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import common
import live
from common import Figure, Report

NAME = "idle"


def ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def shares(pids: dict[str, int], seconds: float) -> dict[str, float]:
    """Each of PIDS' share of one core over a window of SECONDS (utime + stime)."""
    hz = os.sysconf("SC_CLK_TCK")
    t0 = time.monotonic()
    start = {name: ticks(pid) for name, pid in pids.items()}
    common.wait_until(lambda: time.monotonic() - t0 >= seconds, timeout=seconds + 5, interval=0.5)
    spent = time.monotonic() - t0
    return {name: (ticks(pid) - start[name]) / hz / spent for name, pid in pids.items()}


def captured(lv: live.Live) -> int:
    """The daemon's count of panes it captured (``/metrics``); -1 when it has none."""
    _, body = common.http_get(lv.daemon.host, lv.daemon.port, "/metrics", lv.daemon.token)
    for line in body.decode().splitlines():
        if line.startswith("the_loop_tmux_pane_captures_total "):
            return int(line.split()[1])
    return -1


def measure(count: int, seconds: float) -> dict[str, float]:
    # unconfined, as the tests run it: the fake agent writes its records outside its tree
    with live.Live.start(
        f"{NAME}-{count}", max_sessions=count + 50, sandbox={"mode": "none"}
    ) as lv:
        with common.step(f"{count} starts posted back to back"):
            lv.burst_spawn(count)
            lv.wait_idle(timeout=600)
        server = lv.install.tmux("display-message", "-p", "#{pid}").stdout.strip()
        time.sleep(5)  # the screens go quiet (quietSeconds) and the detector settles
        before = captured(lv)
        got = shares({"daemon": lv.daemon.pid, "tmux": int(server)}, seconds)
        got["captures"] = captured(lv) - before if before >= 0 else -1
        print(
            f"{count} live idle agents over {seconds:g}s: daemon {got['daemon']:.2%}, "
            f"tmux server {got['tmux']:.2%}, together {got['daemon'] + got['tmux']:.2%} of a core; "
            f"{got['captures']:.0f} panes captured in the window (-1: not counted)",
            flush=True,
        )
        return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="50,200")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    report = Report(NAME, "Idle cost of live agents", __doc__ or "")
    for count in [int(c) for c in args.counts.split(",")]:
        got = measure(count, args.seconds)
        together = (got["daemon"] + got["tmux"]) * 100
        report.note(
            f"{count} live idle agents: daemon {got['daemon']:.2%} + tmux server "
            f"{got['tmux']:.2%} of a core over {args.seconds:g}s (/proc/<pid>/stat)"
        )
        target = 1.0 if count == 200 else None
        report.figure(
            Figure(f"idle.cpu.{count}", f"idle CPU, {count} live agents (daemon + tmux)",
                   together, "% core", target)
        )  # fmt: skip
    report.finish()


if __name__ == "__main__":
    main()
