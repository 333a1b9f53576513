"""What an acknowledgement costs beside what this machine allows (``webhook_ack.py``).

The floors, measured in the same run with the same client: a bare ``fdatasync`` of a small
append, and ``floor_server.py`` answering with nothing else to do, or after appending and
syncing each body. The daemon's CPU time and bytes written per delivery (``/proc``). The
breakdown: a daemon under ``cProfile`` (its main thread) with ``strace -c -f`` attached.
"""

from __future__ import annotations

import os
import pstats
import signal
import subprocess
import sys
import time
from pathlib import Path

import common
from ack_client import drained, one_shot_requests, sequential_new
from common import Daemon, Figure, Install, Report


def bare_fdatasync(directory: Path, count: int = 300) -> list[float]:
    """A bare ``fdatasync`` of a small append (2 KB, the size of a delivery), COUNT times, in
    the state dir: the disk's share of the floor (ms each)."""
    probe = directory / "fsync-probe"
    fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    took = []
    try:
        for _ in range(count):
            t0 = time.perf_counter()
            os.write(fd, b"x" * 2048)
            os.fdatasync(fd)
            took.append((time.perf_counter() - t0) * 1000)
    finally:
        os.close(fd)
        probe.unlink()
    return took


class FloorServer:
    """``floor_server.py`` in a process of its own (``durable``: it appends and syncs each
    body before answering); ``host``/``port`` as a daemon's, for the same client."""

    def __init__(self, durable: Path | None = None) -> None:
        extra = ["--durable", str(durable)] if durable else []
        script = Path(__file__).with_name("floor_server.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), *extra], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.host, self.port = "127.0.0.1", int(self.proc.stdout.readline())

    def __enter__(self) -> FloorServer:
        return self

    def __exit__(self, *_: object) -> None:
        self.proc.kill()
        self.proc.wait(10)


def floors(report: Report, install: Install, count: int) -> None:
    """This machine's floors in this run, with the client the daemon is measured with: a bare
    ``fdatasync`` of a small append; a loopback connect, request and answer to a server that
    does nothing else; the same server appending and syncing each body before it answers."""
    took = bare_fdatasync(install.state_dir)
    s = report.distribution("floor.fdatasync", "floor: bare fdatasync of a 2 KB append", took)
    report.figure(Figure("floor.fdatasync.p50", "floor: bare fdatasync, 2 KB append", s.p50, "ms"))
    for key, label, durable in (
        ("loopback", "loopback connect + request + answer", None),
        ("durable", "loopback + append + fdatasync + answer", install.root / "floor-journal"),
    ):
        with FloorServer(durable) as server:
            reqs = one_shot_requests(server, count + 100, f"floor-{key}", accepted=True)
            lat = sequential_new(server, reqs, 202, warmup=100)
        s = report.distribution(f"floor.{key}", f"floor: {label}", lat)
        report.figure(Figure(f"floor.{key}.p50", f"floor: {label}, p50", s.p50, "ms"))


def written_bytes(pid: int) -> int:
    """What process PID has written so far through write-like calls (``wchar``): the WAL, the
    database file at checkpoints, the answers on the sockets."""
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    return 0


def _strace_counts(summary: str) -> dict[str, tuple[int, float]]:
    """``strace -c`` output as {syscall: (calls, seconds)}."""
    found = {}
    for line in summary.splitlines():
        parts = line.split()
        if (
            len(parts) >= 5
            and parts[0].replace(".", "").isdigit()
            and parts[-1].isidentifier()
            and parts[-1] != "total"
        ):
            found[parts[-1]] = (int(parts[3]), float(parts[1]))
    return found


def breakdown(report: Report, install: Install, count: int) -> None:
    """Where one accepted delivery's time goes, in a daemon of its own run under cProfile (its
    main thread, the event loop), with ``strace -c -f`` attached for COUNT deliveries one at a
    time on new connections: syscalls per acknowledgement by kind, the profile's top."""
    profile = install.root / "daemon.prof"
    daemon = Daemon(install, ["-m", "cProfile", "-o", str(profile)]).start()
    sequential_new(daemon, one_shot_requests(daemon, 200, "bd-warm", accepted=True), 202, 200)
    drained(install)
    out = install.root / "strace.txt"
    trace = subprocess.Popen(
        ["strace", "-c", "-f", "-o", str(out), "-p", str(daemon.pid)], stderr=subprocess.PIPE
    )
    assert trace.stderr is not None
    trace.stderr.readline()  # "strace: Process N attached"
    reqs = one_shot_requests(daemon, count, "bd", accepted=True)
    with common.step(f"{count} accepted deliveries one at a time under strace -c -f"):
        lat = sequential_new(daemon, reqs, 202, warmup=0)
        drained(install)
    trace.send_signal(signal.SIGINT)
    trace.wait(30)
    counts = _strace_counts(out.read_text())
    total_calls = sum(c for c, _ in counts.values())
    total_seconds = sum(t for _, t in counts.values()) or 1.0
    top = sorted(counts.items(), key=lambda kv: -kv[1][0])[:8]
    report.note(
        f"breakdown, strace -c -f over {count} accepted deliveries one at a time (the inbox "
        f"worker's processing of them included; p50 under strace {common.summarize(lat).p50:.2f}"
        f" ms): {total_calls / count:.0f} syscalls per delivery; "
        + ", ".join(
            f"{name} {calls / count:.1f} ({seconds / total_seconds:.0%} of syscall time)"
            for name, (calls, seconds) in top
        )
    )
    print(out.read_text(), flush=True)
    daemon.stop()
    stats = pstats.Stats(str(profile))
    print(f"cProfile of the daemon's main thread (start-up left out), {count + 200} deliveries:")
    serving = r"^(?!.*(importlib|<frozen|pydantic|typing\.py|dataclasses|enum\.py|builtins\.exec))"
    stats.sort_stats("tottime").print_stats(serving, 25)
    stats.sort_stats("cumulative").print_stats(serving, 30)
