"""Named locks shared by every process and thread on one state dir (``flock`` on a file).

Used to serialize the processing of one work item (or one standing session) across the daemon
and the CLI, while different names proceed in parallel.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

from the_loop.errors import Unavailable

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def _lock_path(state_dir: Path, name: str) -> Path:
    safe = _SAFE.sub("-", name)[:80]
    digest = hashlib.sha1(name.encode()).hexdigest()[:10]
    return state_dir / "locks" / f"{safe}-{digest}.lock"


@contextmanager
def named_lock(state_dir: Path, name: str, timeout: float = 120.0) -> Iterator[None]:
    """Hold the exclusive lock NAME for the block; ``Unavailable`` after TIMEOUT seconds."""
    path = _lock_path(state_dir, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Unavailable(f"timed out waiting for the lock of {name}") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.02)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def named_locks(state_dir: Path, names: list[str], timeout: float = 120.0) -> Iterator[None]:
    """Hold several named locks, taken in sorted order so two holders never deadlock."""
    with ExitStack() as stack:
        for name in sorted(set(names)):
            stack.enter_context(named_lock(state_dir, name, timeout))
        yield
