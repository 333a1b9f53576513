"""The webhook benchmarks' client: signed ``push`` deliveries, sent one at a time on a new
connection each (``Connection: close``, timed from ``connect()`` to the whole answer), to the
daemon or to a floor server alike; and the inbox checks between runs."""

from __future__ import annotations

import json
import socket
import sqlite3
import time
import uuid
from typing import Protocol

import common
from common import Install

from tests.fakes import payloads as P


class Server(Protocol):
    """Where requests go: the daemon, or a floor server."""

    host: str
    port: int


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


def drained(install: Install) -> None:
    """Wait until the inbox worker has processed every delivery sent so far, so that the next
    run measures intake alone (not intake beside the worker draining the last run)."""

    def idle() -> bool:
        conn = sqlite3.connect(install.state_dir / "the-loop.db", timeout=30)
        try:
            row = conn.execute(
                "SELECT COUNT(*) FROM inbox WHERE status IN ('pending', 'processing')"
            ).fetchone()
        finally:
            conn.close()
        return int(row[0]) == 0

    with common.step("waiting for the inbox worker to drain"):
        common.wait_until(idle, timeout=600, interval=0.2, what="the inbox drained")


def one_shot_requests(daemon: Server, count: int, tag: str, accepted: bool) -> list[bytes]:
    """COUNT deliveries sent with ``Connection: close``; ACCEPTED False signs them wrongly."""
    run = uuid.uuid4().hex[:8]
    secret = common.SECRET if accepted else "not-the-secret"
    return [
        common.webhook_request(
            daemon.host,
            daemon.port,
            "push",
            f"{tag}-{run}-{i}",
            push_body(i),
            close=True,
            secret=secret,
        )
        for i in range(count)
    ]


def _read_response(sock: socket.socket) -> int:
    buf = bytearray()
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        buf += chunk
    return int(buf[9:12]) if len(buf) >= 12 else 0


def sequential_new(daemon: Server, requests: list[bytes], expect: int, warmup: int) -> list[float]:
    """One at a time, a new connection each: connect, send, read until the server closes."""
    latencies: list[float] = []
    for i, raw in enumerate(requests):
        t0 = time.perf_counter()
        sock = socket.create_connection((daemon.host, daemon.port), timeout=30)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            sock.sendall(raw)
            status = _read_response(sock)
        finally:
            sock.close()
        elapsed = (time.perf_counter() - t0) * 1000
        if status != expect:
            raise RuntimeError(f"delivery {i} answered {status}, not {expect}")
        if i >= warmup:
            latencies.append(elapsed)
    return latencies
