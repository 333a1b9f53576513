"""What both runners share: a private working directory, per-key ordering locks, and a way to
tell that a pid still names the process that was signalled.

``KeyedLock`` orders critical sections per key among the threads of one process (a
``threading.Lock`` per key) and among processes (``fcntl.flock`` on one file per key in a
private directory), so the CLI and the daemon deliver to one target in turn.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from the_loop.errors import BadInput, StateError

_KEY_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,200}\Z")
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


def default_work_dir() -> Path:
    """``$XDG_RUNTIME_DIR/the-loop`` when set, else ``<tmp>/the-loop-<uid>``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return Path(runtime) / "the-loop"
    return Path(tempfile.gettempdir()) / f"the-loop-{os.getuid()}"


def private_dir(path: Path) -> Path:
    """Create PATH (mode 0700) when missing; raise ``StateError`` unless it is ours and private."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.lstat()
    except OSError as exc:
        raise StateError(f"cannot use directory {path}: {exc}") from None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise StateError(f"{path} is not a directory owned by this user")
    if info.st_mode & 0o022:
        raise StateError(f"{path} is writable by others; refusing to keep locks there")
    return path


class KeyedLock:
    """Mutual exclusion per key, across threads and processes, rooted in DIRECTORY."""

    def __init__(self, directory: Path, namespace: str) -> None:
        self.directory = directory
        self.namespace = namespace

    def path_for(self, key: str) -> Path:
        if not _KEY_RE.match(key):
            raise BadInput(f"invalid lock key {key!r}")
        return self.directory / f"{self.namespace}--{key}.lock"

    @contextlib.contextmanager
    def hold(self, key: str) -> Iterator[None]:
        """Hold the lock of KEY for the duration of the block (blocking, no timeout)."""
        path = self.path_for(key)
        with _thread_lock(str(path)):
            private_dir(self.directory)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)


def _thread_lock(name: str) -> threading.Lock:
    with _THREAD_LOCKS_GUARD:
        lock = _THREAD_LOCKS.get(name)
        if lock is None:
            lock = _THREAD_LOCKS[name] = threading.Lock()
        return lock


@dataclass(frozen=True, slots=True)
class ProcessIdentity:
    """A pid plus its start time (clock ticks since boot; None where /proc is missing)."""

    pid: int
    start_time: int | None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, start time) from /proc/PID/stat, or None when there is no such process."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes().decode("ascii", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = raw.rsplit(")", 1)[1].split()
    return fields[0], int(fields[19])


def process_identity(pid: int) -> ProcessIdentity | None:
    """The identity of running process PID; None when it is gone or a zombie."""
    if pid <= 1:
        return None
    if not Path("/proc/self/stat").exists():
        return ProcessIdentity(pid, None) if _signal_zero(pid) else None
    try:
        found = _proc_stat(pid)
    except (OSError, ValueError, IndexError):
        return ProcessIdentity(pid, None) if _signal_zero(pid) else None
    if found is None or found[0] in ("Z", "X"):
        return None
    return ProcessIdentity(pid, found[1])


def still_running(identity: ProcessIdentity) -> bool:
    """True while IDENTITY's pid names the same, not yet exited, process."""
    current = process_identity(identity.pid)
    if current is None:
        return False
    return identity.start_time is None or current.start_time == identity.start_time


def _signal_zero(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
