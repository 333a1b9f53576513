"""Host memory from ``/proc``: what is available, and the resident memory of process trees.

``available_mb`` reads ``MemAvailable`` from ``/proc/meminfo``; ``tree_rss_mb`` sums the
resident set (``/proc/<pid>/statm``) of given root processes and all their descendants (parent
links from ``/proc/<pid>/stat``), each process counted once. Without ``/proc`` (not Linux) the
figures are None and nothing waits on them. Reads only; never raises.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from the_loop.wire import Wire

PROC = Path("/proc")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
MB = 1024 * 1024


class AgentMemory(Wire):
    """One live agent's RSS (MiB): its pane's process tree."""

    agent: str
    rss_mb: float


class MemoryReport(Wire):
    """The host's available memory and the live agents' RSS (MiB), as ``status`` shows it."""

    available_mb: float | None
    agents_rss_mb: float
    live_agents: int
    agents: list[AgentMemory] = []
    min_free_memory_mb: int = 0
    max_agents_memory_mb: int | None = None
    waiting: str | None = None
    """Why a start would wait now (None: it would start)."""


def available_mb(proc: Path = PROC) -> float | None:
    """The host's ``MemAvailable`` in MiB; None when it cannot be read."""
    try:
        text = (proc / "meminfo").read_text("ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return None


def _parents(proc: Path) -> dict[int, list[int]]:
    """Children of each pid, from every process's ``stat``."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return children
    for name in names:
        if not name.isdigit():
            continue
        try:
            stat = (proc / name / "stat").read_bytes()
        except OSError:
            continue
        fields = stat.rpartition(b")")[2].split()
        if len(fields) > 1:
            children.setdefault(int(fields[1]), []).append(int(name))
    return children


def _rss_bytes(proc: Path, pid: int) -> int:
    try:
        return int((proc / str(pid) / "statm").read_bytes().split()[1]) * PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def trees_rss_mb(roots: Mapping[str, Iterable[int]], proc: Path = PROC) -> dict[str, float]:
    """Per name in ROOTS, the RSS in MiB of its root pids and their descendants (a process
    reachable from two names counts for the first)."""
    children = _parents(proc)
    seen: set[int] = set()
    out: dict[str, float] = {}
    for name, pids in roots.items():
        total = 0
        stack = [p for p in pids if p > 1]
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            total += _rss_bytes(proc, pid)
            stack.extend(children.get(pid, ()))
        out[name] = round(total / MB, 1)
    return out
