"""Idle and slow connections are closed (issue 29 item 2, SPEC §11): under ``ulimit -n 1024``,
1,100 connections that never send a byte leave ``/healthz`` and a signed webhook answering
within a second (the oldest idle connection is closed to make room), the idle ones are closed
after ``idleSeconds``, and the daemon's log says so in a line or two, not a traceback each."""

from __future__ import annotations

import contextlib
import resource
import selectors
import socket
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.security.raw import address
from tests.work import Work
from the_loop.web import limits

pytestmark = pytest.mark.security

IDLE_SECONDS = 6.0
FILE_LIMIT = 1024
IDLE_CONNECTIONS = 1100


@contextlib.contextmanager
def file_limit(soft: int) -> Iterator[None]:
    """Processes started meanwhile get SOFT as their open-file limit (``ulimit -n``)."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


@pytest.fixture
def limited(work: Work) -> Iterator[Daemon]:
    work.configure(
        github={"enabled": True}, server={"port": 0, "limits": {"idleSeconds": IDLE_SECONDS}}
    )
    d = Daemon(work)
    with file_limit(FILE_LIMIT):
        d.start()
    yield d
    d.stop()


def _open_idle(daemon: Daemon, count: int) -> list[socket.socket]:
    found = []
    for _ in range(count):
        sock = socket.create_connection(address(daemon), timeout=5)
        sock.setblocking(False)
        found.append(sock)
    return found


def _closed_by_server(socks: list[socket.socket]) -> int:
    """How many of SOCKS the server has closed (EOF or reset), without blocking."""
    closed = 0
    with selectors.DefaultSelector() as sel:
        for sock in socks:
            sel.register(sock, selectors.EVENT_READ)
        for key, _ in sel.select(timeout=0):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                if sock.recv(1) == b"":
                    closed += 1
            except ConnectionResetError:
                closed += 1
            except BlockingIOError:
                pass
    return closed


def _timed(fn: object) -> tuple[int, float]:
    started = time.monotonic()
    status = fn()  # type: ignore[operator]
    return int(status), time.monotonic() - started


def test_idle_connections_under_a_file_limit_leave_health_and_intake_answering(
    limited: Daemon,
) -> None:
    log_before = limited.log_path.stat().st_size
    socks = _open_idle(limited, IDLE_CONNECTIONS)
    try:
        opened = time.monotonic()
        with httpx.Client(timeout=5) as client:
            for i in range(5):
                status, took = _timed(lambda: client.get(f"{limited.url}/healthz").status_code)
                assert status == 200 and took < 1.0, (status, took)
                status, took = _timed(
                    lambda: limited.post("ping", {"zen": "hi"}, f"d-{i}").status_code  # noqa: B023
                )
                assert status == 200 and took < 1.0, (status, took)
        assert time.monotonic() - opened < IDLE_SECONDS  # all of this while they were open
        # the cap closed the oldest to make room; the rest are closed once idle too long
        wait_until(
            lambda: _closed_by_server(socks) == len(socks),
            timeout=IDLE_SECONDS + 10,
            what="every idle connection closed by the server",
        )
    finally:
        for sock in socks:
            sock.close()
    assert limited.api("GET", "/health").status_code == 200
    metrics = limited.metrics()
    assert 'the_loop_shed_total{what="idle connections closed at the connection cap"}' in metrics
    assert 'the_loop_shed_total{what="silent connections closed"}' in metrics
    limited.stop()
    log = limited.log()
    grown = limited.log_path.stat().st_size - log_before
    assert grown < 100 * 1024, f"the log grew by {grown} bytes"
    assert "Traceback" not in log
    assert "shed by the server's limits" in log


def _burst(daemon: Daemon, count: int) -> list[socket.socket]:
    """COUNT connections started at once (non-blocking connects, none waited for)."""
    found = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        with contextlib.suppress(BlockingIOError):
            sock.connect(address(daemon))
        found.append(sock)
    return found


def _shed_at_cap(daemon: Daemon) -> int:
    return int(
        daemon.metric('the_loop_shed_total{what="idle connections closed at the connection cap"}')
        or 0
    )


def test_a_burst_of_connections_at_the_cap_is_shed_and_health_answers(limited: Daemon) -> None:
    """The event loop accepts a whole queue of connections in one turn (decision 0073): a
    burst arriving with the server a few connections under its cap is shed by the cap, the
    daemon never runs out of descriptors, and health answers meanwhile (within a second, well
    before the idle connections' own timeout would have made room)."""
    cap = limits.connection_cap(1000)
    held = _open_idle(limited, cap - 8)
    burst = _burst(limited, 600)

    def answered_quickly() -> bool:
        try:
            status, took = _timed(
                lambda: httpx.get(f"{limited.url}/healthz", timeout=1.0).status_code
            )
        except httpx.TransportError:  # its SYN met a full queue: the burst is still arriving
            return False
        return status == 200 and took < 1.0

    try:
        wait_until(answered_quickly, timeout=IDLE_SECONDS / 2, what="health during the burst")
        wait_until(
            lambda: _shed_at_cap(limited) >= limits.LISTEN_BACKLOG,
            timeout=IDLE_SECONDS / 2,
            what="at least a queue's worth of the burst shed at the cap",
        )
        assert limited.api("GET", "/health").status_code == 200
    finally:
        for sock in held + burst:
            sock.close()
    limited.stop()
    log = limited.log()
    assert "Traceback" not in log
    assert "Too many open files" not in log


def test_the_cap_follows_the_file_limit() -> None:
    with file_limit(FILE_LIMIT):
        assert limits.connection_cap(5000) == FILE_LIMIT - limits.FD_RESERVE
        assert limits.connection_cap(100) == 100


def test_a_silent_connection_is_closed_after_the_idle_timeout(limited: Daemon) -> None:
    with socket.create_connection(address(limited), timeout=IDLE_SECONDS + 10) as sock:
        started = time.monotonic()
        assert sock.recv(1) == b""  # closed by the server, nothing said
        took = time.monotonic() - started
    assert IDLE_SECONDS - 1 < took < IDLE_SECONDS + 3
