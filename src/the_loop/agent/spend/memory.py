"""Host memory from ``/proc``: what is available, and the memory of process trees.

``available_mb`` reads ``MemAvailable`` from ``/proc/meminfo``; ``trees_memory_mb`` sums, over
given root processes and all their descendants (parent links from ``/proc/<pid>/stat``, each
process counted once), the resident set and its anonymous part (``/proc/<pid>/statm``:
resident minus file-backed and shared pages). The anonymous part is what the host gets back
when the processes exit: the file-backed pages (an agent's executable and libraries, shared by
every agent running the same binary) stay in the page cache, which ``MemAvailable`` already
counts as available. Without ``/proc`` (not Linux) the figures are None and nothing waits on
them. Reads only; never raises.
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
    """One live agent's memory (MiB): its pane's process tree, resident and anonymous."""

    agent: str
    rss_mb: float
    anon_mb: float = 0.0


class MemoryReport(Wire):
    """The host's available memory and the live agents' RSS (MiB), as ``status`` shows it."""

    available_mb: float | None
    agents_rss_mb: float
    agents_anon_mb: float = 0.0
    """What admission counts against ``admission.maxAgentsMemoryMb``."""
    live_agents: int
    agents: list[AgentMemory] = []
    min_free_memory_mb: int = 0
    max_agents_memory_mb: int | None = None
    waiting: str | None = None
    """Why a start would wait now (None: it would start)."""


def available_mb(proc: Path = PROC) -> float | None:
    """The host's ``MemAvailable`` in MiB; None when it cannot be read."""
    return _meminfo_mb(proc, "MemAvailable:")


def total_mb(proc: Path = PROC) -> float | None:
    """The host's ``MemTotal`` in MiB; None when it cannot be read."""
    return _meminfo_mb(proc, "MemTotal:")


def _meminfo_mb(proc: Path, field: str) -> float | None:
    try:
        text = (proc / "meminfo").read_text("ascii")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(field):
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


def _statm_bytes(proc: Path, pid: int) -> tuple[int, int]:
    """(resident, anonymous resident) bytes of PID; (0, 0) when it is gone."""
    try:
        fields = (proc / str(pid) / "statm").read_bytes().split()
        resident, shared = int(fields[1]), int(fields[2])
    except (OSError, IndexError, ValueError):
        return 0, 0
    return resident * PAGE_BYTES, max(resident - shared, 0) * PAGE_BYTES


def tree_pids(roots: Mapping[str, Iterable[int]], proc: Path = PROC) -> dict[str, list[int]]:
    """Per name in ROOTS, its root pids and all their descendants (a process reachable from
    two names belongs to the first)."""
    children = _parents(proc)
    seen: set[int] = set()
    out: dict[str, list[int]] = {}
    for name, pids in roots.items():
        members = out[name] = []
        stack = [p for p in pids if p > 1]
        while stack:
            pid = stack.pop()
            if pid in seen:
                continue
            seen.add(pid)
            members.append(pid)
            stack.extend(children.get(pid, ()))
    return out


def trees_memory_mb(
    roots: Mapping[str, Iterable[int]], proc: Path = PROC
) -> dict[str, tuple[float, float]]:
    """Per name in ROOTS, (resident, anonymous resident) MiB of its process tree."""
    out: dict[str, tuple[float, float]] = {}
    for name, pids in tree_pids(roots, proc).items():
        sizes = [_statm_bytes(proc, pid) for pid in pids]
        out[name] = (
            round(sum(s[0] for s in sizes) / MB, 1),
            round(sum(s[1] for s in sizes) / MB, 1),
        )
    return out
