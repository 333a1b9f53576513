"""The webhook route runs no SQLite on the event loop (issue 14 item 2, SPEC §12): while the
database's write lock is held by another process, a delivery waits for its commit, and the
server keeps answering other requests meanwhile; the delivery is acknowledged once the lock
goes, and committed exactly once."""

from __future__ import annotations

import json
import socket
import sqlite3
import time

import httpx

from tests.daemon import SECRET, Daemon
from tests.fakes import payloads as P
from the_loop.github.signature import sign


def _raw_delivery(host: str, port: int, delivery: str) -> bytes:
    body = json.dumps(P.issue_comment_event("note while locked")).encode()
    head = (
        f"POST /webhooks/github HTTP/1.1\r\nHost: {host}:{port}\r\n"
        "Content-Type: application/json\r\nX-GitHub-Event: issue_comment\r\n"
        f"X-GitHub-Delivery: {delivery}\r\n"
        f"X-Hub-Signature-256: {sign(SECRET.encode(), body)}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def test_a_delivery_waiting_for_a_locked_database_does_not_freeze_the_server(
    daemon: Daemon,
) -> None:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    lock = sqlite3.connect(daemon.work.env.state_dir / "the-loop.db", isolation_level=None)
    lock.execute("BEGIN IMMEDIATE")
    try:
        sock = socket.create_connection((host, int(port)), timeout=60)
        sock.sendall(_raw_delivery(host, int(port), "locked-1"))
        took = []
        for _ in range(5):
            started = time.monotonic()
            r = httpx.get(f"{daemon.url}/healthz", timeout=5)
            took.append(time.monotonic() - started)
            assert r.status_code == 200
        assert max(took) < 1.0, took
    finally:
        lock.execute("ROLLBACK")
        lock.close()
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
    sock.close()
    assert answer.startswith(b"HTTP/1.1 202"), answer[:200]
    listed = json.loads(daemon.work.cli("inbox", "list", "--format", "json").stdout)
    assert [i["deliveryId"] for i in listed].count("locked-1") == 1
