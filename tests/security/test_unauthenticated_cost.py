"""Unauthenticated requests cost almost nothing (issue 12 item 1, SPEC §11): a flood of
bad-signature webhooks with large headers grows the database by a small bounded amount, every
rejection is counted in metrics, oversized or slow request heads and slow bodies are cut off
with a 4xx, and a client that goes away mid-body is logged in one line."""

from __future__ import annotations

import re
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from the_loop.web import limits, webhooks

pytestmark = pytest.mark.security

FLOOD = 2_000
THREADS = 4
GROWTH_BOUND = 64 * 1024
"""Bytes the database (main file, WAL and shared-memory index) may grow by over the flood;
storing each rejection's 12 KB delivery header, as before, would add about 24 MB."""


def _db_bytes(state_dir: Path) -> int:
    return sum(p.stat().st_size for p in state_dir.glob("the-loop.db*"))


def _flood(url: str, count: int) -> list[int]:
    big = "d" * 12_000
    statuses: list[int] = []
    with httpx.Client(timeout=10) as client:
        for i in range(count):
            r = client.post(
                f"{url}/webhooks/github",
                content=b'{"action":"created"}',
                headers={
                    "X-GitHub-Event": "issue_comment",
                    "X-GitHub-Delivery": f"{big}{i}",
                    "X-Hub-Signature-256": "sha256=" + "0" * 64,
                    "X-Padding": "p" * 2_000,
                },
            )
            statuses.append(r.status_code)
    return statuses


def _metric(daemon: Daemon, pattern: str) -> int:
    return sum(int(m.group(1)) for m in re.finditer(pattern, daemon.metrics()))


def test_bad_signature_flood_grows_the_database_by_a_bounded_amount(daemon: Daemon) -> None:
    state_dir = daemon.work.env.state_dir
    _flood(daemon.url, 20)  # the first rejection of its kind is recorded: settle it first
    before = _db_bytes(state_dir)
    results: list[list[int]] = []
    threads = [
        threading.Thread(target=lambda: results.append(_flood(daemon.url, FLOOD // THREADS)))
        for _ in range(THREADS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    statuses = [s for chunk in results for s in chunk]
    assert len(statuses) == FLOOD and set(statuses) == {401}
    daemon.stop()  # the writer drains what it queued; every byte is on disk now
    growth = _db_bytes(state_dir) - before
    assert growth < GROWTH_BOUND, f"the database grew by {growth} bytes"
    rejected = daemon.work.events("webhook.rejected")
    assert 1 <= len(rejected) <= 3
    assert all(e.get("deliveryId") is None for e in rejected)  # 12 KB is no delivery id: not stored


def test_every_rejection_is_counted_and_only_one_is_recorded(daemon: Daemon) -> None:
    statuses = _flood(daemon.url, 300)
    assert set(statuses) == {401}
    counted = _metric(
        daemon,
        r'the_loop_webhook_rejections_total\{status="401",reason="unauthorized"\} (\d+)',
    )
    assert counted == 300
    daemon.stop()
    rejected = [
        e for e in daemon.work.events("webhook.rejected") if e["payload"].get("status") == 401
    ]
    assert len(rejected) == 1
    assert rejected[0]["payload"]["reason"] == "signature does not match"


def _raw(daemon: Daemon, data: bytes, timeout: float = 5.0) -> tuple[bytes, float]:
    """Send DATA on a new connection; the first response line and how long it took."""
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    started = time.monotonic()
    with socket.create_connection((host, int(port)), timeout=timeout) as sock:
        sock.sendall(data)
        answer = b""
        while b"\r\n" not in answer:
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.split(b"\r\n", 1)[0], time.monotonic() - started


def test_oversized_heads_are_refused_quickly(daemon: Daemon) -> None:
    path = b"/webhooks/github"
    big_header = b"X-Big: " + b"h" * (limits.MAX_HEADER_BYTES + 1) + b"\r\n"
    many = b"".join(b"X-H%d: v\r\n" % i for i in range(limits.MAX_HEADERS + 5))
    long_url = b"/webhooks/github?" + b"q" * (limits.MAX_REQUEST_LINE + 1)
    cases = [
        (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n" + big_header + b"\r\n", b"431"),
        (b"POST " + path + b" HTTP/1.1\r\nHost: x\r\n" + many + b"\r\n", b"431"),
        (b"GET " + long_url + b" HTTP/1.1\r\nHost: x\r\n\r\n", b"414"),
    ]
    for data, status in cases:
        line, took = _raw(daemon, data)
        assert line.startswith(b"HTTP/1.1 " + status), line
        assert took < 2.0
    assert _metric(daemon, r'the_loop_http_refused_total\{status="431"\} (\d+)') == 2
    assert _metric(daemon, r'the_loop_http_refused_total\{status="414"\} (\d+)') == 1


def test_slow_body_and_slow_head_are_cut_off(daemon: Daemon) -> None:
    slow_body = (
        b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n"
        b"X-GitHub-Event: push\r\n\r\n" + b"{" * 10
    )
    slow_head = b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nX-Partial: "
    answers: dict[str, tuple[bytes, float]] = {}
    budget = max(webhooks.BODY_SECONDS, limits.HEADER_SECONDS) + 10

    def run(name: str, data: bytes) -> None:
        answers[name] = _raw(daemon, data, timeout=budget)

    threads = [
        threading.Thread(target=run, args=("body", slow_body)),
        threading.Thread(target=run, args=("head", slow_head)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    body_line, body_took = answers["body"]
    head_line, head_took = answers["head"]
    assert body_line.startswith(b"HTTP/1.1 408"), body_line
    assert head_line.startswith(b"HTTP/1.1 408"), head_line
    assert webhooks.BODY_SECONDS - 1 < body_took < webhooks.BODY_SECONDS + 5
    assert limits.HEADER_SECONDS - 1 < head_took < limits.HEADER_SECONDS + 5
    # the daemon still serves
    assert daemon.api("GET", "/health").status_code == 200


def test_client_gone_mid_body_is_one_log_line(daemon: Daemon) -> None:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    for _ in range(3):
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(
                b"POST /webhooks/github HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n"
                + b"{" * 100
            )

    def counted() -> bool:
        pattern = r"the_loop_client_disconnects_total (\d+)"
        return _metric(daemon, pattern) == 3

    wait_until(counted, timeout=10, what="three disconnects counted")
    daemon.stop()
    log = daemon.log()
    assert "Traceback" not in log
    lines = [line for line in log.splitlines() if "disconnected before sending the body" in line]
    assert len(lines) == 3, log
