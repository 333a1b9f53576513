"""Intake and claims with the state in PostgreSQL, beside the embedded SQLite.

1. **Accepted webhooks** into a real ``the-loop serve`` (signed ``push`` deliveries, a new
   connection each, as GitHub sends them): one at a time, then 32 concurrent clients — once
   with the SQLite file, once with ``database.url`` naming a local PostgreSQL 15 started for
   the run (``fsync`` on, ``synchronous_commit`` on: every 202 follows a durable commit on
   both).
2. **Claim latency**: two ``Database`` objects on one database (two nodes' worth of store)
   with two claiming threads each take 2,000 ready inbox items; each ``claim_next`` is timed
   (on PostgreSQL ``SELECT ... FOR UPDATE SKIP LOCKED``, on SQLite ``BEGIN IMMEDIATE``).

3. **Two nodes**: two daemons (``node.name`` ``bench-a`` and ``bench-b``) on one PostgreSQL
   database, the 32 clients split 16 and 16 between them, against one daemon's 32 clients on
   the same database kind in the same run.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

import common
from ack_client import one_shot_requests, sequential_new
from common import Daemon, Figure, Install, Report
from webhook_ack import concurrent_new

from tests.pg import PgServer, start_server
from the_loop.store import Database, inbox, open_database

NAME = "cluster"
BACKENDS = ("sqlite", "postgresql")


def intake(report: Report, backend: str, url: str | None, count: int, total: int) -> None:
    with Install(f"{NAME}-{backend}") as install:
        sections: dict[str, object] = {"github": {"enabled": True}}
        if url is not None:
            sections["database"] = {"url": url}
        install.write_config(**sections)
        daemon = Daemon(install).start()
        reqs = one_shot_requests(daemon, count + 100, f"{backend}-seq", accepted=True)
        with common.step(f"{backend}: {count} accepted deliveries one at a time"):
            lat = sequential_new(daemon, reqs, 202, warmup=100)
        s = report.distribution(
            f"{backend}.new.seq", f"{backend}: accepted, new connection each, one at a time", lat
        )
        report.figure(
            Figure(f"{backend}.ack.new.p50", f"{backend}: accepted ack p50", s.p50, "ms", 1.0)
        )
        report.figure(
            Figure(f"{backend}.ack.new.p99", f"{backend}: accepted ack p99", s.p99, "ms", 2.5)
        )
        reqs = one_shot_requests(daemon, total, f"{backend}-c32", accepted=True)
        with common.step(f"{backend}: {total} accepted deliveries over 32 clients"):
            lat32, elapsed = concurrent_new(daemon, reqs, 32, 202)
        s32 = report.distribution(
            f"{backend}.new.c32", f"{backend}: accepted, new connection each, 32 clients", lat32
        )
        report.figure(
            Figure(
                f"{backend}.ack.new.rate32",
                f"{backend}: accepted/s, 32 clients",
                len(lat32) / elapsed,
                "req/s",
                2500,
                better="higher",
            )
        )
        report.figure(
            Figure(
                f"{backend}.ack.new.p99_32", f"{backend}: ack p99, 32 clients", s32.p99, "ms", 30
            )
        )
        daemon.stop()


def two_nodes(report: Report, url: str, total: int) -> None:
    """Accepted webhooks with 16 clients on each of two nodes sharing URL's database."""
    with ExitStack() as stack:
        daemons = []
        for name in ("bench-a", "bench-b"):
            install = stack.enter_context(Install(f"{NAME}-{name}"))
            install.write_config(
                github={"enabled": True}, database={"url": url}, node={"name": name}
            )
            daemons.append(Daemon(install).start())
        batches = [
            one_shot_requests(d, total // 2, f"two-{i}", accepted=True)
            for i, d in enumerate(daemons)
        ]
        found: list[tuple[list[float], float]] = [([], 0.0), ([], 0.0)]

        def hammer(i: int) -> None:
            found[i] = concurrent_new(daemons[i], batches[i], 16, 202)

        threads = [threading.Thread(target=hammer, args=(i,)) for i in range(2)]
        with common.step(f"two nodes: {total} accepted deliveries over 2 x 16 clients"):
            t0 = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - t0
        lat = found[0][0] + found[1][0]
        s = report.distribution("two.new.c32", "two nodes: accepted, 2 x 16 clients", lat)
        report.figure(
            Figure(
                "two.ack.new.rate32",
                "two nodes on one PostgreSQL: accepted/s, 2 x 16 clients",
                len(lat) / elapsed,
                "req/s",
                2500,
                better="higher",
            )
        )
        report.figure(Figure("two.ack.new.p99_32", "two nodes: ack p99", s.p99, "ms", 30))
        for daemon in daemons:
            daemon.stop()


def claims(report: Report, backend: str, server: PgServer, items: int) -> None:
    state = Path(tempfile.mkdtemp(prefix="the-loop-bench-claims-"))
    url = None
    if backend == "postgresql":
        server.admin("CREATE DATABASE claims")
        url = server.url("claims")
    nodes: list[Database] = [open_database(state, url), open_database(state, url)]
    for i in range(items):
        inbox.accept(nodes[i % 2], f"c{i}", "push", b"{}", "webhook")
    took: list[float] = []
    guard = threading.Lock()

    def worker(db: Database) -> None:
        while True:
            t0 = time.perf_counter()
            claimed = inbox.claim_next(db)
            elapsed = (time.perf_counter() - t0) * 1000
            if claimed is None:
                return
            with guard:
                took.append(elapsed)

    threads = [threading.Thread(target=worker, args=(nodes[i % 2],)) for i in range(4)]
    with common.step(f"{backend}: {items} claims, two databases x two threads"):
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if len(took) != items:
        report.note(f"{backend}: {len(took)} claims for {items} items")
    s = report.distribution(f"{backend}.claim", f"{backend}: claim_next latency", took)
    report.figure(Figure(f"{backend}.claim.p50", f"{backend}: claim p50", s.p50, "ms"))
    report.figure(Figure(f"{backend}.claim.p99", f"{backend}: claim p99", s.p99, "ms"))
    for db in nodes:
        db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000, help="deliveries one at a time")
    parser.add_argument("--total", type=int, default=4000, help="deliveries over 32 clients")
    parser.add_argument("--items", type=int, default=2000, help="inbox items to claim")
    args = parser.parse_args()
    report = Report(NAME, "Intake and claims on PostgreSQL beside SQLite", __doc__ or "")
    with common.step("starting PostgreSQL (fsync on)"):
        server = start_server(durable=True)
    try:
        for backend in BACKENDS:
            url = None
            if backend == "postgresql":
                server.admin("CREATE DATABASE intake")
                url = server.url("intake")
            intake(report, backend, url, args.count, args.total)
        server.admin("CREATE DATABASE intake2")
        two_nodes(report, server.url("intake2"), args.total)
        for backend in BACKENDS:
            claims(report, backend, server, args.items)
        report.note(
            "PostgreSQL 15 on the same 2-core machine, over loopback TCP; both backends commit "
            "each acknowledgement durably before the 202"
        )
    finally:
        server.stop()
    report.finish()


if __name__ == "__main__":
    main()
