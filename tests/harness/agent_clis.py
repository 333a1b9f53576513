"""Where the real agent CLIs are, for the tests that need them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.harness import HarnessAdapter, LaunchSpec
    from the_loop.runner.tmux import TmuxRunner

REPO = Path(__file__).resolve().parents[2]
CLAUDE_BIN = REPO / "node_modules" / ".bin" / "claude"


def find_cli(name: str) -> str | None:
    """The project's pinned copy under node_modules/.bin, else one on PATH."""
    local = REPO / "node_modules" / ".bin" / name
    if local.exists():
        return str(local)
    return shutil.which(name)


def start_interactive(
    runner: TmuxRunner,
    target: str,
    adapter: HarnessAdapter,
    spec: LaunchSpec,
    *,
    resume: bool,
    timeout: float = 60.0,
) -> None:
    """Launch ADAPTER's interactive CLI (new, or resuming SPEC's conversation) in tmux session
    TARGET as the-loop does (prepare, then spawn) and wait until it is ready for input."""
    launch = adapter.resume_interactive(spec) if resume else adapter.interactive(spec)
    adapter.prepare(launch)
    runner.spawn(target, launch.argv, cwd=launch.cwd, env=launch.env).unwrap()
    assert runner.wait_ready(target, launch.ready_pattern, timeout=timeout), (
        runner.capture(target).unwrap().text
    )
