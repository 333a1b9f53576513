"""Webhook acknowledgement: signed deliveries over loopback into a real ``the-loop serve``.

1. One at a time at a fixed rate (200/s): the client-side time from the first byte sent to the
   whole ``202`` read, on one keep-alive connection. Each 202 means the delivery is committed
   to the durable inbox (SQLite, WAL) and its ``webhook.received`` event is written.
2. Sustained: 32 keep-alive connections sending a bounded total as fast as the daemon answers;
   throughput (requests/s over the whole run) and the per-request latency distribution.

Payloads are ``push`` deliveries (about 2 KB of JSON): the route verifies the HMAC, parses the
JSON and commits them like any other event; the inbox worker, running meanwhile in the same
daemon, ignores them quickly (``push`` is outside the default event filter), so the figure is
the intake path and not an agent's work. Every delivery id is new (no duplicates).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sqlite3
import time
import uuid

import common
from common import AsyncHttpConn, Daemon, Figure, HttpConn, Install, Report

from tests.fakes import payloads as P

NAME = "webhook_ack"


def push_body(i: int) -> bytes:
    commits = [
        {
            "id": f"{i:08x}{k:032x}",
            "message": f"Commit {k} of push {i}: tidy the scheduler",
            "timestamp": "2026-11-01T10:00:00Z",
            "author": {"name": "Alice", "email": "alice@example.com", "username": "alice"},
            "added": [],
            "removed": [],
            "modified": ["src/scheduler.py"],
        }
        for k in range(3)
    ]
    payload = {
        "ref": "refs/heads/main",
        "before": "9049f1265b7d61be4a8904a9a27120d2064dab3b",
        "after": "6dcb09b5b57875f334f61aebed695e2e4193db5e",
        "repository": P.repository(),
        "pusher": {"name": "alice", "email": "alice@example.com"},
        "sender": P.user(),
        "created": False,
        "deleted": False,
        "forced": False,
        "commits": commits,
    }
    return json.dumps(payload).encode()


def inbox_count(install: Install) -> int:
    conn = sqlite3.connect(install.state_dir / "the-loop.db", timeout=30)
    try:
        return int(conn.execute("SELECT COUNT(*) FROM inbox").fetchone()[0])
    finally:
        conn.close()


def paced(daemon: Daemon, count: int, rate: float, warmup: int) -> tuple[list[float], int]:
    """One at a time at RATE/s; returns latencies (ms) and how many sends started late."""
    conn = HttpConn(daemon.host, daemon.port)
    run = uuid.uuid4().hex[:8]
    requests = [
        common.webhook_request(daemon.host, daemon.port, "push", f"ack-{run}-{i}", push_body(i))
        for i in range(warmup + count)
    ]
    latencies: list[float] = []
    late = 0
    interval = 1.0 / rate
    start = time.perf_counter()
    try:
        for i, raw in enumerate(requests):
            due = start + i * interval
            now = time.perf_counter()
            if now < due:
                time.sleep(due - now)  # pacing the fixed request rate, not waiting for a state
            elif i and now - due > interval:
                late += 1
            t0 = time.perf_counter()
            status, body = conn.request(raw)
            elapsed = (time.perf_counter() - t0) * 1000
            if status != 202:
                raise RuntimeError(f"delivery {i} answered {status}: {body[:200]!r}")
            if i >= warmup:
                latencies.append(elapsed)
    finally:
        conn.close()
    return latencies, late


async def _hammer(
    daemon: Daemon, requests: list[bytes], connections: int
) -> tuple[list[float], float]:
    conns = [await AsyncHttpConn.open(daemon.host, daemon.port) for _ in range(connections)]
    latencies: list[float] = []
    next_index = 0

    async def worker(conn: AsyncHttpConn) -> None:
        nonlocal next_index
        while next_index < len(requests):
            raw = requests[next_index]
            next_index += 1
            t0 = time.perf_counter()
            status, body = await conn.request(raw)
            latencies.append((time.perf_counter() - t0) * 1000)
            if status != 202:
                raise RuntimeError(f"answered {status}: {body[:200]!r}")

    started = time.perf_counter()
    try:
        await asyncio.gather(*(worker(c) for c in conns))
    finally:
        elapsed = time.perf_counter() - started
        for conn in conns:
            await conn.close()
    return latencies, elapsed


def concurrent(daemon: Daemon, total: int, connections: int) -> tuple[list[float], float]:
    run = uuid.uuid4().hex[:8]
    requests = [
        common.webhook_request(daemon.host, daemon.port, "push", f"tp-{run}-{i}", push_body(i))
        for i in range(total)
    ]
    return asyncio.run(_hammer(daemon, requests, connections))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="paced deliveries")
    parser.add_argument("--rate", type=float, default=200.0, help="paced deliveries per second")
    parser.add_argument("--total", type=int, default=20000, help="deliveries under concurrency")
    parser.add_argument("--connections", type=int, default=32)
    args = parser.parse_args()

    report = Report(NAME, "Webhook acknowledgement", __doc__ or "")
    with Install(NAME) as install:
        install.write_config(github={"enabled": True})
        daemon = Daemon(install).start()
        report.figure(
            Figure("rss.idle.ack", "daemon RSS, started and idle", daemon.rss_mb(), "MB", 100)
        )
        with common.step(f"{args.count} deliveries one at a time at {args.rate:g}/s"):
            lat, late = paced(daemon, args.count, args.rate, warmup=200)
        s = report.distribution("paced", "ack latency, one at a time", lat)
        if late:
            report.note(f"{late} paced sends started more than one interval late")
        stored = inbox_count(install)
        report.note(f"inbox rows after the paced run: {stored} (every 202 is a committed row)")
        report.figure(
            Figure(
                "ack.p50",
                "webhook ack p50 (one at a time)",
                s.p50,
                "ms",
                1.0,
                earlier=0.79,
                earlier_text="0.79 ms (not persisted)",
            )
        )
        report.figure(
            Figure(
                "ack.p99",
                "webhook ack p99 (one at a time)",
                s.p99,
                "ms",
                2.0,
                earlier=1.13,
                earlier_text="1.13 ms (not persisted)",
            )
        )
        path = common.PLOTS / f"{NAME}-paced.svg"
        common.svg_distribution(
            path,
            f"Webhook ack, one at a time at {args.rate:g}/s (n={s.n})",
            lat,
            marks=[(1.0, "target p50 1 ms", "#d62728"), (2.0, "target p99 2 ms", "#d62728")],
        )
        report.plot(path)

        before = inbox_count(install)
        with common.step(f"{args.total} deliveries over {args.connections} connections"):
            lat2, elapsed = concurrent(daemon, args.total, args.connections)
        rate = len(lat2) / elapsed
        s2 = report.distribution("concurrent", f"ack latency, {args.connections} connections", lat2)
        print(f"throughput: {rate:,.0f} requests/s ({len(lat2)} in {elapsed:.2f} s)", flush=True)
        stored = inbox_count(install) - before
        if stored != len(lat2):
            report.note(f"only {stored} of {len(lat2)} acknowledged deliveries are in the inbox")
        rss_after = daemon.rss_mb()
        report.figure(
            Figure(
                "ack.rate",
                f"throughput, {args.connections} connections",
                rate,
                "req/s",
                2000,
                better="higher",
                earlier=1112,
            )
        )
        report.figure(
            Figure(
                "ack.concurrent.p99",
                f"ack p99, {args.connections} connections",
                s2.p99,
                "ms",
                50,
                earlier=873,
            )
        )
        report.figure(
            common.rss_figure("rss.after.ack", "daemon RSS after the webhook runs", rss_after)
        )
        path = common.PLOTS / f"{NAME}-concurrent.svg"
        common.svg_distribution(
            path,
            f"Webhook ack under {args.connections} connections ({rate:,.0f} req/s, n={s2.n})",
            lat2,
            marks=[(50.0, "target p99 50 ms (earlier system: 873 ms)", "#d62728")],
        )
        report.plot(path)
        pending = inbox_count(install)
        report.note(
            f"{pending} deliveries durable in the inbox; the worker drains them in the background"
        )
    report.finish()


if __name__ == "__main__":
    main()
