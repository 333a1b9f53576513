"""Event streams bounded (issue 29 item 3, SPEC §11): over real HTTP, at ``eventStreams`` open
streams a new one ends the oldest read-only stream; with only full-token streams left it is
refused with 503."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.security.raw import address, head
from tests.work import Work

pytestmark = pytest.mark.security

READ_ONLY = "r" * 40
CAP = 3


@pytest.fixture
def capped(work: Work) -> Iterator[Daemon]:
    work.configure(github={"enabled": True}, server={"port": 0, "limits": {"eventStreams": CAP}})
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    yield d
    d.stop()


class Stream:
    def __init__(self, daemon: Daemon, token: str) -> None:
        self.sock = socket.create_connection(address(daemon), timeout=10)
        self.sock.sendall(
            head("GET", "/api/v1/events/stream", {"Authorization": f"Bearer {token}"})
        )
        self.data = b""
        wait_until(lambda: self._read() and b"\r\n\r\n" in self.data, 10, what="a response")
        self.status = int(self.data.split(b" ", 2)[1])

    def _read(self) -> bool:
        self.sock.settimeout(0.05)
        try:
            chunk = self.sock.recv(65536)
        except TimeoutError:
            return True
        self.data += chunk
        return True

    def ended(self) -> bool:
        self._read()
        return self.data.endswith(b"0\r\n\r\n")

    def close(self) -> None:
        self.sock.close()


def test_the_stream_cap_closes_the_oldest_read_only_stream_first(capped: Daemon) -> None:
    opened: list[Stream] = []
    try:
        first_ro = Stream(capped, READ_ONLY)
        second_ro = Stream(capped, READ_ONLY)
        full = Stream(capped, capped.token)
        opened += [first_ro, second_ro, full]
        assert [s.status for s in opened] == [200, 200, 200]
        newcomer = Stream(capped, capped.token)
        opened.append(newcomer)
        assert newcomer.status == 200
        wait_until(first_ro.ended, 10, what="the oldest read-only stream ended")
        assert not second_ro.ended() and not full.ended()
        another = Stream(capped, capped.token)
        opened.append(another)
        assert another.status == 200
        wait_until(second_ro.ended, 10, what="the next read-only stream ended")
        refused = Stream(capped, capped.token)
        opened.append(refused)
        assert refused.status == 503
        assert not full.ended() and not newcomer.ended()
    finally:
        for s in opened:
            s.close()
