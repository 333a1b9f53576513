"""A private tmux server per test: its own ``TMUX_TMPDIR`` and ``-L the-loop-test-<random>``.

``private_runner`` points ``TMUX_TMPDIR`` at a fresh short directory (socket paths must stay
under ~100 bytes), yields a ``TmuxRunner`` on a random socket and kills that server at the
end, so a test can never reach the user's default server or another test's.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from the_loop.runner.tmux import TmuxRunner


@contextmanager
def private_runner(work_dir: Path, **kwargs: Any) -> Iterator[TmuxRunner]:
    """A ``TmuxRunner`` on a private socket inside a private ``TMUX_TMPDIR``."""
    tmux_dir = tempfile.mkdtemp(prefix="tl-")
    saved = os.environ.get("TMUX_TMPDIR")
    os.environ["TMUX_TMPDIR"] = tmux_dir
    runner = TmuxRunner(f"the-loop-test-{secrets.token_hex(4)}", work_dir=work_dir, **kwargs)
    try:
        yield runner
    finally:
        runner.kill_server()
        if saved is None:
            os.environ.pop("TMUX_TMPDIR", None)
        else:
            os.environ["TMUX_TMPDIR"] = saved
        shutil.rmtree(tmux_dir, ignore_errors=True)


def socket_dir() -> Path:
    """The directory where tmux puts this user's sockets under the current ``TMUX_TMPDIR``."""
    return Path(os.environ["TMUX_TMPDIR"]) / f"tmux-{os.getuid()}"
