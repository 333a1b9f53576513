"""Small helpers shared by the tests: polling waits, never bare sleeps."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    condition: Callable[[], T], timeout: float = 10.0, interval: float = 0.02, what: str = ""
) -> T:
    """Poll CONDITION until it returns a truthy value; return it, or fail after TIMEOUT."""
    deadline = time.monotonic() + timeout
    last: T = condition()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        threading_wait(interval)
        last = condition()
    return last


async def await_until(
    condition: Callable[[], Awaitable[T]],
    timeout: float = 10.0,
    interval: float = 0.02,
    what: str = "",
) -> T:
    """Async twin of ``wait_until``."""
    deadline = time.monotonic() + timeout
    last = await condition()
    while not last:
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or condition}")
        await asyncio.sleep(interval)
        last = await condition()
    return last


def threading_wait(seconds: float) -> None:
    """Yield the CPU between polls of a condition (the polling interval, not a fixed wait)."""
    import threading

    threading.Event().wait(seconds)


def run_in_terminal(
    argv: list[str], env: dict[str, str], timeout: float = 60.0, cwd: str | None = None
) -> tuple[int, str]:
    """Run ARGV with stdin, stdout and stderr on a new pseudo-terminal (what a person's shell
    gives it); its exit code and everything it wrote, read until it exits."""
    import os
    import pty
    import select
    import subprocess

    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=secondary, stdout=secondary, stderr=secondary, env=env, cwd=cwd
    )
    os.close(secondary)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([primary], [], [], 0.1)
            if ready:
                try:
                    chunk = os.read(primary, 65536)
                except OSError:  # the terminal closed: the process has exited
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(primary)
    return proc.wait(timeout=10), out.decode("utf-8", "replace")
