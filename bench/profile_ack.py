"""Where the time of one accepted webhook goes: perf counters per stage, then cProfile.

Not part of ``make bench`` (it prints a breakdown, no SPEC figure). In one process, on a fresh
state dir, for the same ``push`` deliveries ``webhook_ack.py`` sends:

1. **Stages** (``perf_counter`` around each, N deliveries, medians): the HMAC check, the one
   JSON decode, the parse into a typed work event, its serialization for the inbox, building
   the intake event, and the acceptance commit — ``synchronous = FULL`` (what a 202 waits
   for) beside ``NORMAL`` (what it waited for before) — plus a bare ``fdatasync`` of a file on
   the same disk, and the whole route through the ASGI app (``httpx.ASGITransport``, no
   socket) with the group-commit writer.
2. **cProfile** of the route through the ASGI app (the event-loop thread only), top functions
   by own time, so the HTTP framework's share is visible.

    .venv/bin/python bench/profile_ack.py [--count 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import common
from ack_client import push_body

from the_loop import events as ev
from the_loop.context import open_ctx
from the_loop.github.signature import sign, verify_signature
from the_loop.intake import dispatch
from the_loop.store import inbox
from the_loop.store.intake_writer import writer_for
from the_loop.web.app import create_app


def _median_us(samples: list[float]) -> float:
    return statistics.median(samples) * 1e6


def _timed(fn: Callable[[int], object], count: int) -> list[float]:
    out = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    n = args.count
    common.print_facts(common.machine_facts())
    with tempfile.TemporaryDirectory(prefix="the-loop-profile-") as tmp:
        root = Path(tmp)
        config = root / "the-loop.yaml"
        config.write_text(
            f"stateDir: {root / 'state'}\nserver: {{port: 0}}\ngithub: {{enabled: true}}\n"
        )
        os.environ["THE_LOOP_WEBHOOK_SECRET"] = common.SECRET
        ctx = open_ctx(config)
        secret = common.SECRET.encode()
        bodies = [push_body(i) for i in range(n)]
        sigs = [sign(secret, b) for b in bodies]
        stages: dict[str, list[float]] = {}
        stages["HMAC-SHA256 check"] = _timed(
            lambda i: verify_signature(secret, bodies[i], sigs[i]), n
        )
        decoded = [dispatch.decode(b) for b in bodies]
        stages["JSON decode (once)"] = _timed(lambda i: dispatch.decode(bodies[i]), n)
        intakes = [dispatch.intake(ctx, "push", f"p-{i}", decoded[i]) for i in range(n)]
        stages["parse into a work event"] = _timed(
            lambda i: dispatch.intake(ctx, "push", f"p-{i}", decoded[i]), n
        )
        stages["serialize the work event"] = _timed(lambda i: intakes[i].stored(), n)
        stages["build the intake event"] = _timed(
            lambda i: ev.build("webhook.received", source="x", delivery_id="d", event="push"), n
        )

        def commit(tag: str) -> Callable[[int], object]:
            def run(i: int) -> object:
                job = dispatch.acceptance(
                    dispatch.intake(ctx, "push", f"{tag}-{i}", decoded[i]), bodies[i], "webhook"
                )
                return inbox.accept_in_transaction(ctx.db, job)

            return run

        conn = ctx.db.connect()
        conn.execute("PRAGMA synchronous = NORMAL")
        stages["acceptance commit, synchronous=NORMAL (before)"] = _timed(commit("normal"), n)
        conn.execute("PRAGMA synchronous = FULL")
        stages["acceptance commit, synchronous=FULL (a 202 now)"] = _timed(commit("full"), n)
        conn.execute("PRAGMA synchronous = NORMAL")
        probe = root / "state" / "fsync-probe"
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT, 0o600)
        try:

            def sync(i: int) -> None:
                os.pwrite(fd, b"x" * 4096, (i % 16) * 4096)
                os.fdatasync(fd)

            stages["bare pwrite 4 KB + fdatasync"] = _timed(sync, n)
        finally:
            os.close(fd)

        app = create_app(ctx)

        async def route(count: int, tag: str, profile: cProfile.Profile | None) -> list[float]:
            """Drive the ASGI app directly (no client library, no socket)."""
            out = []
            for i in range(count):
                scope = {
                    "type": "http",
                    "asgi": {"version": "3.0"},
                    "http_version": "1.1",
                    "method": "POST",
                    "scheme": "http",
                    "path": "/webhooks/github",
                    "raw_path": b"/webhooks/github",
                    "query_string": b"",
                    "root_path": "",
                    "client": ("127.0.0.1", 1),
                    "server": ("127.0.0.1", 80),
                    "headers": [
                        (b"x-github-event", b"push"),
                        (b"x-github-delivery", f"{tag}-{i}".encode()),
                        (b"x-hub-signature-256", sigs[i].encode()),
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(bodies[i])).encode()),
                    ],
                }
                messages = [{"type": "http.request", "body": bodies[i], "more_body": False}]
                sent: list[dict[str, object]] = []

                async def receive(messages: list[dict[str, object]] = messages) -> object:
                    return messages.pop() if messages else {"type": "http.disconnect"}

                async def send(
                    message: dict[str, object], sent: list[dict[str, object]] = sent
                ) -> None:
                    sent.append(message)

                if profile:
                    profile.enable()
                t0 = time.perf_counter()
                await app(scope, receive, send)
                out.append(time.perf_counter() - t0)
                if profile:
                    profile.disable()
                assert sent[0]["status"] == 202, sent
            return out

        writer = writer_for(ctx.db)
        stages["whole route via ASGI, durable group commit"] = asyncio.run(route(n, "asgi", None))
        figures = writer.figures
        writer.close()
        print(
            f"\nwriter: {figures.acceptances} acceptances in {figures.commits} commits, "
            f"mean commit {figures.commit_seconds / max(figures.commits, 1) * 1e6:.1f} µs"
        )

        print(f"\nmedians over {n} deliveries of {len(bodies[0])} bytes (µs):")
        for name, samples in stages.items():
            print(f"  {name:<52} {_median_us(samples):8.1f}")
        profile = cProfile.Profile()
        asyncio.run(route(min(n, 1000), "prof", profile))
        writer_for(ctx.db).close()
        print("\ncProfile of the route through the ASGI app (event-loop thread), by own time:")
        stats = pstats.Stats(profile, stream=sys.stdout)
        stats.sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
