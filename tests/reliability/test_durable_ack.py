"""A 202 means the delivery is on stable storage (issue 14 item 1, SPEC §12).

The daemon is traced with strace (its fsync/fdatasync calls, every thread, with wall-clock
start and duration) during a burst of signed deliveries from several concurrent clients. Every
202 must be preceded by a sync of the database's WAL that started after its request was sent
and returned before its answer arrived; group commit lets one sync cover several deliveries.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.daemon import SECRET, Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from the_loop.github.signature import sign

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (make setup)"),
]

CLIENTS = 8
PER_CLIENT = 25
_SYNC = re.compile(
    r"^(?P<pid>\d+)\s+(?P<start>\d+\.\d+) (?:fsync|fdatasync)\(\d+<(?P<path>[^>]*)>\)"
    r" = 0 <(?P<took>\d+\.\d+)>$"
)
_UNFINISHED = re.compile(
    r"^(?P<pid>\d+)\s+(?P<start>\d+\.\d+) (?:fsync|fdatasync)\(\d+<(?P<path>[^>]*)>"
    r" <unfinished \.\.\.>$"
)
_RESUMED = re.compile(
    r"^(?P<pid>\d+)\s+\d+\.\d+ <\.\.\. (?:fsync|fdatasync) resumed>\) = 0"
    r" <(?P<took>\d+\.\d+)>$"
)
"""strace -f -ttt -T -y lines: a whole call, or one split by another thread's output."""


@dataclass(frozen=True)
class Ack:
    delivery: str
    sent: float
    answered: float


@dataclass(frozen=True)
class Sync:
    start: float
    end: float


def _syncs(trace: Path, wal: Path) -> list[Sync]:
    """The completed syncs of WAL, with wall-clock start and end (split calls joined)."""
    found = []
    pending: dict[str, tuple[float, str]] = {}
    for line in trace.read_text().splitlines():
        if m := _SYNC.match(line):
            start, path, took = float(m["start"]), m["path"], float(m["took"])
        elif m := _UNFINISHED.match(line):
            pending[m["pid"]] = (float(m["start"]), m["path"])
            continue
        elif (m := _RESUMED.match(line)) and m["pid"] in pending:
            (start, path), took = pending.pop(m["pid"]), float(m["took"])
        else:
            continue
        if Path(path) == wal:
            found.append(Sync(start, start + took))
    return found


def _client(url: str, n: int, acks: list[Ack], lock: threading.Lock) -> None:
    with httpx.Client(timeout=30) as client:
        for i in range(PER_CLIENT):
            delivery = f"durable-{n}-{i}"
            body = json.dumps(P.issue_comment_event(f"note {delivery}", number=n + 1)).encode()
            headers = {
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": delivery,
                "X-Hub-Signature-256": sign(SECRET.encode(), body),
                "Content-Type": "application/json",
                "Connection": "close",  # a new connection each, as GitHub sends them
            }
            sent = time.time()
            r = client.post(f"{url}/webhooks/github", content=body, headers=headers)
            answered = time.time()
            assert r.status_code == 202, r.text
            with lock:
                acks.append(Ack(delivery, sent, answered))


def test_every_202_follows_a_sync_of_the_wal(daemon: Daemon, tmp_path: Path) -> None:
    assert daemon.proc is not None
    trace = tmp_path / "strace.out"
    errors = tmp_path / "strace.err"
    with errors.open("w") as err:
        tracer = subprocess.Popen(
            [
                "strace",
                "-f",
                "-ttt",
                "-T",
                "-y",
                "-qq",
                "-e",
                "trace=fsync,fdatasync",
                "-o",
                str(trace),
                "-p",
                str(daemon.proc.pid),
            ],
            stderr=err,
        )
    try:
        # strace is attached once a traced call shows up: a rejected delivery writes nothing
        # synchronously, an accepted one syncs; send probes until the trace shows one
        def attached() -> bool:
            daemon.post("issue_comment", P.issue_comment_event("probe"), f"probe-{time.time()}")
            return trace.exists() and "sync(" in trace.read_text()

        wait_until(attached, timeout=30, what="strace attached")
        acks: list[Ack] = []
        lock = threading.Lock()
        clients = [
            threading.Thread(target=_client, args=(daemon.url, n, acks, lock))
            for n in range(CLIENTS)
        ]
        for c in clients:
            c.start()
        for c in clients:
            c.join()
    finally:
        tracer.send_signal(signal.SIGINT)
        tracer.wait(timeout=30)
    assert len(acks) == CLIENTS * PER_CLIENT
    wal = (daemon.work.env.state_dir / "the-loop.db-wal").resolve()
    syncs = _syncs(trace, wal)
    unsynced = [
        a for a in acks if not any(a.sent <= s.start and s.end <= a.answered for s in syncs)
    ]
    assert not unsynced, (
        f"{len(unsynced)} of {len(acks)} acknowledgements had no WAL sync between request and "
        f"answer (first: {unsynced[0]}); {len(syncs)} WAL syncs traced"
    )
    # group commit: concurrent acceptances shared syncs (fewer syncs than acknowledgements)
    first, last = min(a.sent for a in acks), max(a.answered for a in acks)
    during = [s for s in syncs if first <= s.start and s.end <= last]
    print(f"{len(acks)} acknowledgements, {len(during)} WAL syncs during the burst")
    assert len(during) < len(acks)
