"""A database stall never stops intake for good nor freezes health (SPEC §9, §12; issue 12,
item 2): with the database locked past SQLite's busy timeout, or the disk holding it full, the
daemon's inbox worker stalls, says so (``status`` unhealthy, ``/health`` fast), and resumes by
itself once the fault clears, processing every acknowledged delivery exactly once.

A real daemon, a real second process holding the write lock, a real full tmpfs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.pulse import SAFETY_SECONDS
from the_loop.store.db import BUSY_TIMEOUT_MS

pytestmark = pytest.mark.reliability

TOKEN = re.compile(r"tok-(\d+)-end")
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=30, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
print("released", flush=True)
"""


def _seen(work: Work) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in work.agent_dir.glob("*.jsonl"):
        for record in fake_agent.read_prompts(work.agent_dir, path.stem):
            for m in TOKEN.finditer(record.text):
                counts[m.group(1)] += 1
    return counts


def _comment(daemon: Daemon, n: int, start: bool = False) -> httpx.Response:
    text = f"the-loop start tok-{n}-end" if start else f"note tok-{n}-end"
    return daemon.post("issue_comment", P.issue_comment_event(text), f"stall-{n}")


def _status(work: Work) -> tuple[int, dict[str, Any]]:
    result = work.env.run("status", "--format", "json")
    return result.exit_code, json.loads(result.stdout)


def _tasks(daemon: Daemon) -> dict[str, Any]:
    """The daemon's own word on its stalled tasks (``GET /health``, answered from its task
    board whatever the database does). Not ``the-loop status``: when the daemon takes longer
    than the CLI's 2 s, the CLI reads the store itself, and its own process has no tasks."""
    with httpx.Client(timeout=30) as client:
        body = _health_ms(daemon, client)[1]
    return dict(body.get("detail", {}).get("tasks", {}))


def _unhealthy(daemon: Daemon) -> bool:
    with httpx.Client(timeout=30) as client:
        return bool(_health_ms(daemon, client)[1]["status"] == "unhealthy")


def _health_ms(daemon: Daemon, client: httpx.Client) -> tuple[float, dict[str, Any]]:
    t0 = time.perf_counter()
    resp = client.get(f"{daemon.url}/health", headers={"Authorization": f"Bearer {daemon.token}"})
    elapsed = (time.perf_counter() - t0) * 1000
    assert resp.status_code == 200, resp.text
    return elapsed, resp.json()


def _settled(work: Work, acked: set[str]) -> None:
    wait_until(
        lambda: acked <= set(_seen(work)),
        timeout=60,
        interval=0.2,
        what="every acknowledged delivery at its agent",
    )
    doubled = {k: v for k, v in _seen(work).items() if v > 1}
    assert not doubled, f"delivered more than once: {doubled}"
    wait_until(lambda: _status(work)[0] == 0, timeout=30, interval=0.2, what="healthy again")
    dead = json.loads(work.cli("inbox", "list", "--status", "dead", "--format", "json").stdout)
    assert not dead, dead


WRITERS_AHEAD = 6
"""How many of the daemon's other writers (the heartbeat, a pass, the reconciler, a
``task.stalled`` event) may take the in-process write lock before the inbox worker once the
database is locked, each then waiting out SQLite's busy timeout; seen in full parallel suites:
three, and once more than three (the inbox's own try can also wait for its pulse's safety
pass, ``SAFETY_SECONDS``, when nothing wakes it)."""
FAIL_WITHIN = SAFETY_SECONDS + (WRITERS_AHEAD + 1) * BUSY_TIMEOUT_MS / 1000 + 30


@pytest.mark.timeout(FAIL_WITHIN + 90)
def test_intake_resumes_after_a_write_lock_held_past_the_busy_timeout(
    work: Work, holder_factory: Any
) -> None:
    work.configure(github={"enabled": True})
    daemon = Daemon(work)
    daemon.start()
    holders: list[subprocess.Popen[str]] = []
    try:
        assert _comment(daemon, 0, start=True).status_code == 202
        wait_until(lambda: "0" in _seen(work), timeout=30, what="the first delivery processed")
        holder = holder_factory()
        holders.append(holder)
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        # Within seconds the worker, blocked on the lock, reports itself stalled (asked of the
        # daemon: a CLI slower than 2 s on a loaded machine reads the store itself instead)...
        wait_until(lambda: _unhealthy(daemon), timeout=20, interval=0.2, what="unhealthy")
        # ... and /health answers meanwhile without waiting on the lock (every try, no thread
        # pool to wait for; it waits at most 80 ms for the database: decision 0015): one that
        # waited would take the busy timeout, 30 s. Bounded at 1 s, not near the ~85 ms it
        # takes here: a parallel suite on a loaded machine once saw 158 ms.
        with httpx.Client(timeout=5) as client:
            timings = [_health_ms(daemon, client) for _ in range(5)]
        assert all(body["status"] == "unhealthy" for _, body in timings), timings
        slowest = max(ms for ms, _ in timings)
        assert slowest < 1000, f"/health took {slowest:.0f} ms while the database was locked"
        # Past the busy timeout the worker's step fails for real: it must survive that. The
        # daemon's writers queue on one in-process lock, each then waiting out the busy timeout:
        # the worker's turn may come after others' (WRITERS_AHEAD).
        try:
            wait_until(
                lambda: _tasks(daemon).get("inbox", {}).get("failures", 0) >= 1,
                timeout=FAIL_WITHIN,
                interval=0.5,
                what="the inbox worker to fail on the lock",
            )
        except AssertionError as exc:  # say which of the daemon's tasks waited, and since when
            tasks = _tasks(daemon)
            waited = stalled_events(work)
            raise AssertionError(f"{exc}; tasks: {tasks}; stalled: {waited}") from None
        assert holder.stdin is not None
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        acked = {"0"}
        for n in range(1, 4):
            assert _comment(daemon, n).status_code == 202
            acked.add(str(n))
        _settled(work, acked)
        stalled = work.events("task.stalled")
        assert any(e["payload"]["task"] == "inbox" for e in stalled), stalled
        assert any(e["payload"]["task"] == "inbox" for e in work.events("task.recovered"))
    finally:
        for proc in holders:
            if proc.poll() is None:
                proc.kill()
        daemon.stop()


def stalled_events(work: Work) -> list[tuple[str, str]]:
    return [(e.get("ts", ""), e["payload"].get("task", "")) for e in work.events("task.stalled")]


@pytest.fixture
def holder_factory(work: Work) -> Iterator[Any]:
    started: list[subprocess.Popen[str]] = []

    def start() -> subprocess.Popen[str]:
        proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(work.env.state_dir / "the-loop.db")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def small_state(work: Work, tmp_path: Path) -> Iterator[Path]:
    """The state dir on a real 4 MB tmpfs (workspaces elsewhere)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    state = work.env.state_dir
    state.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(state)], check=True)
    try:
        yield state
    finally:
        subprocess.run(["umount", "-l", str(state)], check=False)


def _fill(path: Path) -> None:
    """Write PATH until the filesystem is full."""
    chunk = b"\0" * 65536
    try:
        with path.open("wb") as f:
            while True:
                f.write(chunk)
                f.flush()
    except OSError:
        pass  # full (a small remainder may stay: SQLite's next growth fails all the same)


def test_intake_resumes_after_the_disk_was_full(work: Work, small_state: Path) -> None:
    work.configure(github={"enabled": True}, workspaces={"root": str(work.env.root / "workspaces")})
    daemon = Daemon(work)
    daemon.start()
    try:
        assert _comment(daemon, 0, start=True).status_code == 202
        wait_until(lambda: "0" in _seen(work), timeout=30, what="the first delivery processed")
        filler = small_state / "filler"
        _fill(filler)
        acked = {"0"}
        n = 1
        unhealthy = False
        while not unhealthy and n < 400:
            try:
                if _comment(daemon, n).status_code == 202:
                    acked.add(str(n))
            except httpx.HTTPError:
                pass
            n += 1
            unhealthy = _status(work)[0] == 1
        assert unhealthy, "the full disk never showed in status"
        filler.unlink(missing_ok=True)
        for m in range(n, n + 3):
            assert _comment(daemon, m).status_code == 202
            acked.add(str(m))
        _settled(work, acked)
        assert work.events("task.stalled"), "no stall was recorded"
    finally:
        daemon.stop()


def test_a_damaged_table_is_reported_unhealthy(work: Work) -> None:
    work.configure(github={"enabled": True})
    assert work.env.run("events").exit_code == 0  # creates the database
    db = work.env.state_dir / "the-loop.db"
    conn = sqlite3.connect(db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = int(conn.execute("PRAGMA page_size").fetchone()[0])
        root = int(
            conn.execute(
                "SELECT rootpage FROM sqlite_master WHERE name = 'github_etags'"
            ).fetchone()[0]
        )
    finally:
        conn.close()
    with db.open("r+b") as f:  # a table's root page overwritten: its b-tree is damaged
        f.seek((root - 1) * page_size)
        f.write(b"\xa5" * page_size)
    daemon = Daemon(work)
    daemon.start()
    try:

        def damaged() -> list[str]:
            code, body = _status(work)
            return [p for p in body["health"]["problems"] if "damaged" in p] if code == 1 else []

        found = wait_until(damaged, timeout=30, interval=0.2, what="the damage reported")
        assert "the state database is damaged" in found[0]
    finally:
        daemon.stop()
