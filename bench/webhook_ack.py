"""Webhook acknowledgement: signed deliveries over loopback into a real ``the-loop serve``.

Every 202 is power-loss-durable: the delivery and its ``webhook.received`` event are committed
to the inbox with ``synchronous = FULL`` (an fdatasync of the WAL) before the answer, in group
commits shared by the deliveries that arrive meanwhile. The figures therefore include the sync.

1. **New connection per delivery** (the way GitHub sends webhooks: ``Connection: close``, the
   time counted from ``connect()`` to the whole response read): one at a time back to back,
   then 8 and 32 concurrent clients, for accepted deliveries and for rejected ones (a bad
   signature: nothing stored synchronously, sampled into the event log).
2. **Keep-alive**: one at a time at a fixed rate (200/s) on one connection, then 32 keep-alive
   connections sending a bounded total as fast as the daemon answers.

Beside them, in the same run and with the same client, the machine's floors
(``floor_server.py``): a bare ``fdatasync`` of a 2 KB append, a loopback connect + request +
answer to a server that does nothing else, and the same server appending and syncing each
body before it answers (the least a power-loss-durable acknowledgement can cost here). The
one-at-a-time run also prints what the daemon spends per accepted delivery, its processing by
the inbox worker included: CPU time (``/proc/PID/stat``) and bytes written (``wchar``).

``--quick`` runs the floors and the accepted new-connection figures only; ``--breakdown N``
then starts a second daemon under ``cProfile`` (its main thread: the event loop) and sends it
N deliveries one at a time with ``strace -c -f`` attached: system calls per acknowledgement
by kind, and the profile's top functions.

Payloads are ``push`` deliveries (about 2 KB of JSON): the route verifies the HMAC, parses the
JSON and commits them like any other event; the inbox worker, running meanwhile in the same
daemon, ignores them quickly (``push`` is outside the default event filter), so the figure is
the intake path and not an agent's work. Every delivery id is new (no duplicates).
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import time
import uuid

import common
from ack_client import (
    drained,
    inbox_count,
    one_shot_requests,
    push_body,
    sequential_new,
)
from ack_measure import breakdown, floors, written_bytes
from common import AsyncHttpConn, Daemon, Figure, HttpConn, Install, Report, cpu_seconds

NAME = "webhook_ack"


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


async def _hammer_new(
    daemon: Daemon, requests: list[bytes], clients: int, expect: int
) -> tuple[list[float], float]:
    latencies: list[float] = []
    next_index = 0

    async def client() -> None:
        nonlocal next_index
        while next_index < len(requests):
            raw = requests[next_index]
            next_index += 1
            t0 = time.perf_counter()
            reader, writer = await asyncio.open_connection(daemon.host, daemon.port)
            sock = writer.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            writer.write(raw)
            answer = await reader.read()  # until the server closes (Connection: close)
            writer.close()
            latencies.append((time.perf_counter() - t0) * 1000)
            status = int(answer[9:12]) if len(answer) >= 12 else 0
            if status != expect:
                raise RuntimeError(f"answered {status}, not {expect}: {answer[:200]!r}")

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    return latencies, time.perf_counter() - started


def concurrent_new(
    daemon: Daemon, requests: list[bytes], clients: int, expect: int
) -> tuple[list[float], float]:
    return asyncio.run(_hammer_new(daemon, requests, clients, expect))


def new_connection_runs(
    report: Report, daemon: Daemon, install: Install, count: int, quick: bool = False
) -> None:
    """The new-connection-per-delivery figures (accepted and rejected; 1, 8, 32 clients;
    QUICK: accepted only, 1 and 32 clients)."""
    reqs = one_shot_requests(daemon, count + 200, "nc-seq", accepted=True)
    with common.step(f"{count} accepted deliveries, one at a time, a new connection each"):
        sequential_new(daemon, reqs[:200], 202, warmup=200)
        drained(install)
        written, cpu = written_bytes(daemon.pid), cpu_seconds(daemon.pid)
        lat = sequential_new(daemon, reqs[200:], 202, warmup=0)
        drained(install)  # what the worker does for them is part of their cost
        written = written_bytes(daemon.pid) - written
        cpu = cpu_seconds(daemon.pid) - cpu
    s = report.distribution("new.seq", "accepted, new connection each, one at a time", lat)
    report.figure(
        Figure(
            "ack.new.cpu",
            "daemon CPU per accepted delivery (intake and the worker's processing)",
            cpu * 1000 / count,
            "ms",
        )
    )
    report.figure(
        Figure(
            "ack.new.written",
            "bytes written per accepted delivery (intake and the worker's processing)",
            written / 1024 / count,
            "KB",
        )
    )
    report.figure(
        Figure(
            "ack.new.p50",
            "accepted ack p50, new connection each, one at a time (durable)",
            s.p50,
            "ms",
            0.7,
            earlier=0.69,
            earlier_text="0.69 to 0.77 ms (persists nothing)",
        )
    )
    report.figure(
        Figure(
            "ack.new.p99",
            "accepted ack p99, new connection each, one at a time (durable)",
            s.p99,
            "ms",
            2.5,
        )
    )
    if not quick:  # a quick run leaves the plots of the last whole run alone
        path = common.PLOTS / f"{NAME}-new-sequential.svg"
        common.svg_distribution(
            path,
            f"Accepted webhook, new connection each, one at a time (durable, n={s.n})",
            lat,
            marks=[(0.7, "target p50 0.7 ms", "#d62728"), (2.5, "target p99 2.5 ms", "#d62728")],
        )
        report.plot(path)
        drained(install)
        reqs = one_shot_requests(daemon, count, "nc-rej-seq", accepted=False)
        with common.step(f"{count} rejected deliveries, one at a time, a new connection each"):
            lat = sequential_new(daemon, reqs, 401, warmup=0)
        report.distribution("new.seq.rejected", "rejected, new connection each, one at a time", lat)

    for clients, total in ((8, 4 * count), (32, 4 * count))[quick:]:
        drained(install)
        before = inbox_count(install)
        reqs = one_shot_requests(daemon, total, f"nc-{clients}", accepted=True)
        with common.step(f"{total} accepted deliveries from {clients} clients, new connections"):
            lat, elapsed = concurrent_new(daemon, reqs, clients, 202)
        rate = len(lat) / elapsed
        s = report.distribution(
            f"new.{clients}", f"accepted, new connection each, {clients} clients", lat
        )
        print(f"throughput: {rate:,.0f} accepted/s ({len(lat)} in {elapsed:.2f} s)", flush=True)
        stored = inbox_count(install) - before
        if stored != len(lat):
            report.note(f"only {stored} of {len(lat)} acknowledged deliveries are in the inbox")
        target_rate, target_p99 = (3000.0, 30.0) if clients == 32 else (None, None)
        report.figure(
            Figure(
                f"ack.new.rate{clients}",
                f"accepted/s, new connection each, {clients} clients (durable)",
                rate,
                "req/s",
                target_rate,
                better="higher",
                earlier=1052.0 if clients == 32 else None,
                earlier_text="1,052 to 1,057/s" if clients == 32 else "",
            )
        )
        report.figure(
            Figure(
                f"ack.new.p99_{clients}",
                f"accepted ack p99, new connection each, {clients} clients (durable)",
                s.p99,
                "ms",
                target_p99,
                earlier=852.0 if clients == 32 else None,
                earlier_text="852 to 1,030 ms" if clients == 32 else "",
            )
        )
        if clients == 32 and not quick:
            path = common.PLOTS / f"{NAME}-new-concurrent.svg"
            common.svg_distribution(
                path,
                f"Accepted webhook, new connection each, 32 clients ({rate:,.0f}/s, n={s.n})",
                lat,
                marks=[(30.0, "target p99 30 ms", "#d62728")],
            )
            report.plot(path)
        if quick:
            continue

        drained(install)
        reqs = one_shot_requests(daemon, total, f"nc-rej-{clients}", accepted=False)
        with common.step(f"{total} rejected deliveries from {clients} clients, new connections"):
            lat, elapsed = concurrent_new(daemon, reqs, clients, 401)
        rate = len(lat) / elapsed
        report.distribution(
            f"new.{clients}.rejected", f"rejected, new connection each, {clients} clients", lat
        )
        print(f"throughput: {rate:,.0f} rejected/s ({len(lat)} in {elapsed:.2f} s)", flush=True)
        report.figure(
            Figure(
                f"reject.new.rate{clients}",
                f"rejected/s (bad signature), new connection each, {clients} clients",
                rate,
                "req/s",
                7000.0 if clients == 8 else None,
                better="higher",
                earlier=1480.0 if clients == 8 else None,
                earlier_text="1,480 to 1,494/s" if clients == 8 else "",
            )
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000, help="deliveries one at a time")
    parser.add_argument("--rate", type=float, default=200.0, help="paced deliveries per second")
    parser.add_argument("--total", type=int, default=20000, help="keep-alive under concurrency")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="the floors and the accepted new-connection figures only (1 and 32 clients)",
    )
    parser.add_argument(
        "--breakdown",
        type=int,
        default=0,
        metavar="N",
        help="also N deliveries under strace -c and cProfile (a daemon of its own)",
    )
    args = parser.parse_args()

    # a quick run's partial figures never replace a whole run's in docs/performance.md
    report = Report(
        f"{NAME}-quick" if args.quick else NAME, "Webhook acknowledgement", __doc__ or ""
    )
    with Install(NAME) as install:
        install.write_config(github={"enabled": True})
        daemon = Daemon(install).start()
        report.figure(
            Figure("rss.idle.ack", "daemon RSS, started and idle", daemon.rss_mb(), "MB", 100)
        )
        with common.step("the machine's floors"):
            floors(report, install, args.count // 2)
        new_connection_runs(report, daemon, install, args.count, args.quick)
        if args.quick:
            commits = _intake_commits(daemon)
            if commits:
                report.note(commits)
            daemon.stop()
            if args.breakdown:
                with Install(f"{NAME}-breakdown") as other:
                    other.write_config(github={"enabled": True})
                    breakdown(report, other, args.breakdown)
            report.finish()
            return
        drained(install)
        with common.step(f"{args.count} deliveries one at a time at {args.rate:g}/s, keep-alive"):
            lat, late = paced(daemon, args.count, args.rate, warmup=200)
        s = report.distribution("paced", "ack latency, one at a time, keep-alive", lat)
        if late:
            report.note(f"{late} paced sends started more than one interval late")
        report.figure(
            Figure("ack.p50", "accepted ack p50, keep-alive, one at a time", s.p50, "ms", 1.0)
        )
        report.figure(
            Figure("ack.p99", "accepted ack p99, keep-alive, one at a time", s.p99, "ms", 2.5)
        )
        path = common.PLOTS / f"{NAME}-paced.svg"
        common.svg_distribution(
            path,
            f"Webhook ack, keep-alive, one at a time at {args.rate:g}/s (durable, n={s.n})",
            lat,
            marks=[(1.0, "target p50 1 ms", "#d62728"), (2.5, "target p99 2.5 ms", "#d62728")],
        )
        report.plot(path)

        drained(install)
        before = inbox_count(install)
        with common.step(f"{args.total} deliveries over {args.connections} keep-alive conns"):
            lat2, elapsed = concurrent(daemon, args.total, args.connections)
        rate = len(lat2) / elapsed
        s2 = report.distribution(
            "concurrent", f"ack latency, {args.connections} keep-alive connections", lat2
        )
        print(f"throughput: {rate:,.0f} requests/s ({len(lat2)} in {elapsed:.2f} s)", flush=True)
        stored = inbox_count(install) - before
        if stored != len(lat2):
            report.note(f"only {stored} of {len(lat2)} acknowledged deliveries are in the inbox")
        rss_after = daemon.rss_mb()
        report.figure(
            Figure(
                "ack.rate",
                f"accepted/s, {args.connections} keep-alive connections",
                rate,
                "req/s",
                2500,
                better="higher",
            )
        )
        report.figure(
            Figure(
                "ack.concurrent.p99",
                f"accepted ack p99, {args.connections} keep-alive connections",
                s2.p99,
                "ms",
                30,
            )
        )
        report.figure(
            common.rss_figure("rss.after.ack", "daemon RSS after the webhook runs", rss_after)
        )
        path = common.PLOTS / f"{NAME}-concurrent.svg"
        common.svg_distribution(
            path,
            f"Webhook ack, {args.connections} keep-alive connections ({rate:,.0f}/s, n={s2.n})",
            lat2,
            marks=[(30.0, "target p99 30 ms", "#d62728")],
        )
        report.plot(path)
        pending = inbox_count(install)
        report.note(
            f"{pending} deliveries durable in the inbox; the worker drains them in the background"
        )
        commits = _intake_commits(daemon)
        if commits:
            report.note(commits)
    report.finish()


def _intake_commits(daemon: Daemon) -> str:
    """The daemon's group-commit counters (from /metrics), as a note."""
    token = (daemon.install.state_dir / "api-token").read_text().strip()
    status, body = common.http_get(daemon.host, daemon.port, "/metrics", token)
    if status != 200:
        return ""
    found = dict(
        line.split(" ", 1)
        for line in body.decode().splitlines()
        if line.startswith("the_loop_intake_")
    )
    commits = float(found.get("the_loop_intake_commits_total", "0"))
    accepted = float(found.get("the_loop_intake_acceptances_total", "0"))
    if not commits:
        return ""
    seconds = float(found.get("the_loop_intake_commit_seconds_total", "0"))
    return (
        f"group commit: {accepted:,.0f} acceptances in {commits:,.0f} fully-synced commits "
        f"({accepted / commits:.2f} per sync; largest batch "
        f"{found.get('the_loop_intake_largest_batch', '?').strip()}; mean commit, its sync "
        f"included, {seconds / commits * 1000:.2f} ms)"
    )


if __name__ == "__main__":
    main()
