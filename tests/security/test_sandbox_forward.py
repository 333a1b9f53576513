"""The confined agent's port forwarder (``the_loop.runner.sandbox_forward``): its ports listen
before the harness starts, so a connection the harness makes at once is never refused (the
forwarding child could still be starting on a loaded host: a confined agent's first push was
refused once in a full run)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import the_loop.runner as runner

FORWARD = Path(runner.__file__).parent / "sandbox_forward.py"
LISTEN = "0A"
"""A listening socket's state in ``/proc/net/tcp``."""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_ports_listen_before_the_harness_starts(tmp_path: Path) -> None:
    port = _free_port()
    table, children = tmp_path / "tcp", tmp_path / "children"
    # the harness (sh, which starts in a moment) looks first thing at what listens, then
    # names the forwarding child (its child: the forwarder became it) for the cleanup
    harness = f"cat /proc/net/tcp > {table}; pgrep -P $$ > {children}"
    argv = [sys.executable, "-I", "-S", str(FORWARD), str(tmp_path / "daemon.sock")]
    argv += [f"{port}=proxy", "--", "sh", "-c", harness]
    try:
        done = subprocess.run(argv, timeout=30, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        rows = [line.split() for line in table.read_text().splitlines()[1:]]
        listening = [r for r in rows if r[1] == f"0100007F:{port:04X}" and r[3] == LISTEN]
        assert listening, f"127.0.0.1:{port} did not listen when the harness started"
    finally:
        for pid in children.read_text().split() if children.exists() else []:
            os.kill(int(pid), signal.SIGKILL)
