"""The scale table: how idle CPU, delivery p99, the Sessions page and memory grow from 10 to 200
live sessions.

For each count N (10, 50, 100, 200 by default) a fresh installation and daemon (the fake agent
in tmux, as ``bench/many_sessions.py`` and ``bench/idle.py`` run it; unconfined) gets N
authorized starts posted back to back and waits until every agent took its first prompt and
the inbox and outbox are empty. Then, in this order:

- **idle CPU**: the daemon's and the tmux server's ``utime + stime`` over a window with nothing
  happening (``bench/idle.py``'s measurement, after its settling time), as a share of one core;
- **memory**: the daemon's RSS, the tmux server's RSS, the live agents' memory as ``status``
  counts it for admission (anonymous resident memory of their pane trees) and their RSS;
- **Sessions page**: ``GET /`` with a session cookie over one keep-alive connection (as
  ``bench/dashboard.py``), one request at a time, p50;
- **delivery**: comments one at a time to sessions picked at random, each once the previous one
  was fully processed: comment → prompt recorded inside the agent's pane (as
  ``bench/many_sessions.py``), p50 and p99.

Beside the page and delivery times, the daemon's own CPU per page and per delivery (its
``utime + stime`` over the run, less its idle share of a core over the same time, ÷
requests): on a shared machine the times grow with the other work running (the load average
is printed), the CPU a request costs much less.

Cost that grows with work, not with sessions, shows as flat rows: the last column divides the
figure at the largest N by the one at the smallest.
"""

from __future__ import annotations

import argparse
import random
import time

import common
import dashboard
import idle
import live
from common import Figure, HttpConn, Report

import spend

NAME = "scale"


def beyond_idle(lv: live.Live, cpu: float, t0: float, idle_share: float) -> float:
    """The daemon's CPU ms since it had used CPU seconds at T0, less what it spends idle
    meanwhile (IDLE_SHARE of a core, measured before)."""
    spent = (common.cpu_seconds(lv.daemon.pid) - cpu) * 1000
    return spent - idle_share * (time.monotonic() - t0) * 1000


def page_p50(lv: live.Live, requests: int, sessions: int) -> float:
    cookie = dashboard.login(lv)
    conn = HttpConn(lv.daemon.host, lv.daemon.port)
    raw = dashboard.page_request(lv, "/", cookie)
    status, body = conn.request(raw)
    rows = body.count(b"<tr data-session=")
    if status != 200 or rows != sessions:
        raise RuntimeError(f"GET / answered {status} with {rows} session rows")
    for _ in range(10):
        conn.request(raw)
    lat = []
    for _ in range(requests):
        t0 = time.perf_counter()
        conn.request(raw)
        lat.append((time.perf_counter() - t0) * 1000)
    conn.close()
    return common.summarize(lat).p50


def measure(count: int, seconds: float, comments: int, pages: int) -> dict[str, float]:
    with live.Live.start(
        f"{NAME}-{count}", max_sessions=count + 50, sandbox={"mode": "none"}
    ) as lv:
        with common.step(f"{count} starts posted back to back"):
            sessions = lv.burst_spawn(count)
            lv.wait_idle(timeout=600)
        server = int(lv.install.tmux("display-message", "-p", "#{pid}").stdout.strip())
        with common.step("every agent waiting, the passes after it done"):
            idle.wait_quiet(lv, count)
        with common.step(f"idle CPU over {seconds:g} s"):
            cpu = idle.shares({"daemon": [lv.daemon.pid], "tmux": [server]}, seconds)
        mem = spend.api(lv, "/status")["memory"]
        got = {
            "cpu": (cpu["daemon"] + cpu["tmux"]) * 100,
            "cpu_daemon": cpu["daemon"] * 100,
            "cpu_tmux": cpu["tmux"] * 100,
            "daemon_rss": lv.daemon.rss_mb(),
            "tmux_rss": common.rss_mb(server),
            "agents_anon": float(mem["agentsAnonMb"]),
            "agents_rss": float(mem["agentsRssMb"]),
        }
        with common.step(f"{pages} Sessions pages"):
            before, t0 = common.cpu_seconds(lv.daemon.pid), time.monotonic()
            got["page"] = page_p50(lv, pages, count)
            got["page_cpu"] = beyond_idle(lv, before, t0, cpu["daemon"]) / (pages + 11)
        rng = random.Random(count)
        lat = []
        with common.step(f"{comments} comments one at a time"):
            before, t0 = common.cpu_seconds(lv.daemon.pid), time.monotonic()
            for _ in range(comments):
                ms, _ack = lv.comment(rng.choice(sessions))
                lv.wait_idle()
                lat.append(ms)
            got["deliver_cpu"] = beyond_idle(lv, before, t0, cpu["daemon"]) / comments
        s = common.summarize(lat)
        got["deliver_p50"], got["deliver_p99"] = s.p50, s.p99
        print(
            f"{count} live: idle CPU {got['cpu']:.2f} % of a core "
            f"(daemon {got['cpu_daemon']:.2f}, tmux {got['cpu_tmux']:.2f}); delivery p50 "
            f"{s.p50:.1f} ms, p99 {s.p99:.1f} ms; Sessions page p50 {got['page']:.1f} ms; "
            f"daemon RSS {got['daemon_rss']:.0f} MB, tmux server {got['tmux_rss']:.0f} MB, "
            f"agents {got['agents_anon']:.0f} MB anonymous ({got['agents_rss']:.0f} MB RSS)",
            flush=True,
        )
        return got


ROWS = [
    ("cpu", "idle CPU, daemon + tmux server", "% core", 1.0),
    ("deliver_p99", "delivery p99", "ms", 50.0),
    ("deliver_p50", "delivery p50", "ms", None),
    ("deliver_cpu", "daemon CPU per delivery, beyond idle", "ms", None),
    ("page", "Sessions page p50", "ms", 30.0),
    ("page_cpu", "daemon CPU per Sessions page, beyond idle", "ms", None),
    ("daemon_rss", "daemon RSS", "MB", None),
    ("tmux_rss", "tmux server RSS", "MB", None),
    ("agents_anon", "live agents' memory (admission's figure)", "MB", None),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", default="10,50,100,200")
    parser.add_argument("--seconds", type=float, default=10.0, help="idle CPU window")
    parser.add_argument("--comments", type=int, default=100)
    parser.add_argument("--pages", type=int, default=50)
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    report = Report(NAME, f"Scale: {counts[0]} to {counts[-1]} live sessions", __doc__ or "")
    table = {n: measure(n, args.seconds, args.comments, args.pages) for n in counts}
    head = (
        "| figure | " + " | ".join(f"{n} live" for n in counts) + f" | {counts[-1]} ÷ {counts[0]} |"
    )
    lines = [head, "|---|" + "---:|" * (len(counts) + 1)]
    for key, label, unit, target in ROWS:
        values = [table[n][key] for n in counts]
        # a figure that is nothing at the smallest count has no ratio (idle CPU often is)
        ratio = values[-1] / values[0] if values[0] else None
        cell = f"n/a (0 at {counts[0]})" if ratio is None else f"{ratio:.1f}x"
        growth = f"0 at {counts[0]}: no ratio" if ratio is None else f"{ratio:.1f}x"
        cells = " | ".join(common.fmt_value(v, unit) for v in values)
        lines.append(f"| {label} | {cells} | {cell} |")
        steps = zip(counts, values, strict=True)
        report.note(
            f"{label}: "
            + ", ".join(f"{common.fmt_value(v, unit)} at {n}" for n, v in steps)
            + f" ({growth}, from {counts[0]} to {counts[-1]})"
        )
        for n in counts:
            report.figure(
                Figure(
                    f"scale.{key}.{n}",
                    f"{label}, {n} live",
                    table[n][key],
                    unit,
                    target if n == counts[-1] else None,
                )
            )
    print("\n".join(lines), flush=True)
    report.finish()


if __name__ == "__main__":
    main()
