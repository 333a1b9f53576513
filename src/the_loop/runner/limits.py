"""Per-agent memory and process limits (SPEC §18, ``sandbox.memoryMb`` / ``sandbox.pids``):
the only code that touches cgroups or rlimits for agents (docs/decisions/0062).

Each confined agent gets its own cgroup, a child of the daemon's own cgroup, for each limited
controller the kernel delegates to the daemon (cgroup v2 with the controller enabled for the
daemon's children, or a cgroup v1 hierarchy of that controller whose directory the daemon may
write): ``memory.max`` / ``memory.limit_in_bytes`` (swap included where the kernel counts it),
``pids.max``. The pane's (or headless run's) first process joins those cgroups before it
becomes the sandbox (``joined``: a ``sh`` that writes its own pid, then ``exec``s), so every
process of the agent is counted and nothing of the daemon's is. Without a pids cgroup, a daemon
that does not run as root limits processes with ``RLIMIT_NPROC`` set inside the agent's own
user namespace (counted per user namespace: that agent alone); as root the kernel ignores it.
What cannot be had is reported by ``describe`` (``doctor``) as "not enforced" with why.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PREFIX = "the-loop."
_FILES = {
    ("memory", 2): ("memory.max", "memory.swap.max"),
    ("memory", 1): ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"),
    ("pids", 2): ("pids.max", None),
    ("pids", 1): ("pids.max", None),
}


@dataclass(frozen=True, slots=True)
class Controller:
    """Where the daemon may make cgroups of one controller."""

    name: str
    version: int
    parent: Path
    """The daemon's own cgroup directory of this controller (children go here)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """How one agent is limited: cgroups to join (``cgroup.procs`` files), an rlimit."""

    procs: tuple[Path, ...] = ()
    nproc: int | None = None


def own_cgroups(proc_self: Path = Path("/proc/self/cgroup")) -> dict[str, str]:
    """This process's cgroup paths: ``{controller: path}`` for v1, ``{"": path}`` for v2."""
    out: dict[str, str] = {}
    try:
        lines = proc_self.read_text(encoding="utf-8").splitlines()
    except OSError:
        return out
    for line in lines:
        _, _, rest = line.partition(":")
        names, _, path = rest.partition(":")
        for name in names.split(",") if names else [""]:
            out[name] = path
    return out


def controller(name: str) -> tuple[Controller | None, str]:
    """Where agents' cgroups of controller NAME can be made, or None and why not."""
    mine = own_cgroups()
    v1 = CGROUP_ROOT / name
    if name in mine and (v1 / "cgroup.procs").is_file():
        parent = v1 / mine[name].lstrip("/")
        if os.access(parent, os.W_OK):
            return Controller(name, 1, parent), f"cgroup v1 {parent}"
        return None, f"the daemon cannot write its {name} cgroup {parent}"
    if "" in mine and (CGROUP_ROOT / "cgroup.controllers").is_file():
        parent = CGROUP_ROOT / mine[""].lstrip("/")
        if not os.access(parent, os.W_OK):
            return None, f"the daemon's cgroup {parent} is not delegated to it (not writable)"
        if name not in _words(parent / "cgroup.subtree_control"):
            with contextlib.suppress(OSError):
                (parent / "cgroup.subtree_control").write_text(f"+{name}")
        if name in _words(parent / "cgroup.subtree_control"):
            return Controller(name, 2, parent), f"cgroup v2 {parent}"
        return None, (
            f"the {name} controller is not enabled for children of {parent} (a daemon in a "
            "cgroup of its own with the controller delegated, e.g. systemd Delegate=yes and "
            "the daemon in a leaf of it)"
        )
    return None, f"no {name} cgroup controller here"


def nproc_works() -> tuple[bool, str]:
    """Whether RLIMIT_NPROC inside an agent's user namespace limits that agent alone."""
    if os.getuid() == 0:
        return False, "the daemon runs as root, whose processes RLIMIT_NPROC does not count"
    if shutil.which("prlimit") is None:
        return False, "prlimit (util-linux) is not installed"
    return True, "RLIMIT_NPROC in the agent's own user namespace"


def describe(memory_mb: int | None, pids: int | None) -> list[str]:
    """``doctor``'s words for each configured limit: how it is enforced, or why not."""
    out = []
    if memory_mb is not None:
        found, why = controller("memory")
        out.append(f"memoryMb {memory_mb} " + (f"by {why}" if found else f"not enforced: {why}"))
    if pids is not None:
        found, why = controller("pids")
        enforced = found is not None
        if not enforced:
            enforced, nproc_why = nproc_works()
            why = nproc_why if enforced else f"{why}; {nproc_why}"
        out.append(f"pids {pids} " + (f"by {why}" if enforced else f"not enforced: {why}"))
    return out


def plan(group: str, memory_mb: int | None, pids: int | None) -> Plan:
    """Make GROUP's cgroups with the limits (what the kernel allows; the rest is skipped, as
    ``describe`` says) and say how the agent joins them. Stale empty groups of earlier
    agents are removed by ``sweep`` when the daemon starts and stops."""
    procs: list[Path] = []
    nproc = None
    for name, value in (("memory", memory_mb), ("pids", pids)):
        if value is None:
            continue
        found, _ = controller(name)
        if found is None:
            if name == "pids" and nproc_works()[0]:
                nproc = value
            continue
        made = _make(found, group, value * 1024 * 1024 if name == "memory" else value)
        if made is not None:
            procs.append(made)
        elif name == "pids" and nproc_works()[0]:
            nproc = value
    return Plan(tuple(procs), nproc)


def group_name(state_dir: Path, agent_hash: str) -> str:
    """The cgroup name of one agent of one daemon (two daemons may run the same keys)."""
    daemon = hashlib.sha256(str(state_dir.absolute()).encode("utf-8")).hexdigest()[:8]
    return f"{PREFIX}{daemon}.{agent_hash}"


def inside(argv: list[str], limits: Plan) -> list[str]:
    """ARGV (run inside the sandbox, in its own user namespace) under the LIMITS rlimit."""
    if limits.nproc is None:
        return list(argv)
    prlimit = shutil.which("prlimit") or "prlimit"
    return [prlimit, f"--nproc={limits.nproc}:{limits.nproc}", "--", *argv]


def joined(argv: list[str], limits: Plan) -> list[str]:
    """ARGV (the sandbox) whose first process joins the LIMITS cgroups before it ``exec``s."""
    if not limits.procs:
        return list(argv)
    script = 'for f; do shift; [ "$f" = -- ] && break; echo $$ >"$f" || exit 125; done; exec "$@"'
    return ["/bin/sh", "-c", script, "the-loop-limits", *map(str, limits.procs), "--", *argv]


def sweep(state_dir: Path) -> None:
    """Remove the empty cgroups of the agents of the daemon of STATE_DIR (one with processes
    stays); called when no agent is being spawned (the daemon starting or stopping)."""
    mine = group_name(state_dir, "")
    for name in ("memory", "pids"):
        found, _ = controller(name)
        if found is None:
            continue
        with contextlib.suppress(OSError):
            for entry in found.parent.iterdir():
                if entry.name.startswith(mine) and entry.is_dir():
                    with contextlib.suppress(OSError):
                        entry.rmdir()


def limit_file(found: Controller) -> str:
    """The name of the file that holds FOUND's limit in a cgroup."""
    return _FILES[(found.name, found.version)][0]


def _make(found: Controller, group: str, value: int) -> Path | None:
    where = found.parent / group
    limit_file, swap_file = _FILES[(found.name, found.version)]
    try:
        where.mkdir(exist_ok=True)
        (where / limit_file).write_text(str(value))
        if swap_file is not None and (where / swap_file).exists():
            (where / swap_file).write_text("0" if found.version == 2 else str(value))
    except OSError:
        return None
    return where / "cgroup.procs"


def _words(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").split()
    except OSError:
        return []
