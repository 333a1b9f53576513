"""One daemon per state dir: the ``flock`` on ``daemon.lock`` and the ``daemon.json`` a running
daemon publishes so clients can find it.

Light on purpose (no web stack, no services): the CLI, the doctor and inbox replay ask
``daemon_running`` without loading the daemon.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pydantic import BaseModel

from the_loop.errors import AlreadyRunning, StateError
from the_loop.local_client import INFO_NAME as INFO_NAME  # re-exported
from the_loop.local_client import LOCK_NAME as LOCK_NAME  # re-exported
from the_loop.local_client import daemon_running as daemon_running  # re-exported


class DaemonInfo(BaseModel):
    """What a running daemon writes next to its lock so clients can find it."""

    pid: int
    url: str
    host: str
    port: int
    version: str
    started_at: float
    config_path: str | None = None


@dataclass
class DaemonLock:
    """A held ``flock`` on the state dir's lock file; released when the process exits."""

    handle: IO[str]

    def release(self) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def acquire_lock(state_dir: Path) -> DaemonLock:
    """Take the single-daemon lock of STATE_DIR or raise ``AlreadyRunning`` naming the holder."""
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        handle = (state_dir / LOCK_NAME).open("a+", encoding="utf-8")
    except OSError as exc:
        raise StateError(f"cannot open {state_dir / LOCK_NAME}: {exc.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        info = read_info(state_dir)
        where = f" (pid {info.pid}, {info.url})" if info else ""
        raise AlreadyRunning(
            f"another the-loop daemon already serves the state dir {state_dir}{where}; "
            "stop it with `the-loop stop` or use another stateDir"
        ) from None
    return DaemonLock(handle)


def read_info(state_dir: Path) -> DaemonInfo | None:
    """What the daemon of STATE_DIR wrote about itself; None when nothing (valid) is there."""
    try:
        return DaemonInfo.model_validate_json((state_dir / INFO_NAME).read_text("utf-8"))
    except (OSError, ValueError):
        return None


def write_info(state_dir: Path, info: DaemonInfo) -> None:
    """Publish INFO for clients, atomically (a reader sees the old file or the new one)."""
    tmp = state_dir / f".{INFO_NAME}.{os.getpid()}"
    tmp.write_text(info.model_dump_json(), encoding="utf-8")
    tmp.replace(state_dir / INFO_NAME)
