"""The one health model and the one status model.

``Health`` is what ``GET /api/v1/health`` answers; ``StatusReport`` is what both
``GET /api/v1/status`` and ``the-loop status --format json`` answer (the CLI asks the daemon for
it, see ``the_loop.cli.remote``). ``the_loop.views.status`` computes them; this module stays light
so that clients can parse them without loading the services."""

from __future__ import annotations

from typing import Any

from the_loop.agent.spend.memory import MemoryReport
from the_loop.wire import Timestamp, Wire
from the_loop.work_items.workspace import WorktreesDisk as WorktreesDisk


class Health(Wire):
    """``ok`` unless a check found a problem; ``detail`` holds each check's figures by name."""

    status: str
    version: str
    problems: list[str] = []
    detail: dict[str, Any] = {}

    @property
    def ok(self) -> bool:
        return self.status == "ok" and not self.problems


class StatusReport(Wire):
    """Whether the daemon of the state dir runs (its pid, url, version and start time), its
    health, and the sessions and inbox items by status. ``healthy`` is ``running`` and a
    healthy ``health``; ``problems`` are those of ``health`` (or why the daemon cannot be
    asked)."""

    running: bool
    healthy: bool
    pid: int | None = None
    url: str | None = None
    version: str | None = None
    started_at: Timestamp | None = None
    config_path: str | None = None
    """The config file the running daemon was started on (None: the built-in defaults)."""
    health: Health
    sessions: dict[str, int] = {}
    attention: dict[str, int] = {}
    """Live sessions waiting on a person, by state (needs-input, needs-permission, blocked)."""
    inbox: dict[str, int] = {}
    memory: MemoryReport | None = None
    """Available memory and the live agents' RSS (None when it could not be read)."""
    worktrees: WorktreesDisk | None = None
    """The disk used by worktrees (None: workspaces disabled, or not measured yet)."""

    @property
    def problems(self) -> list[str]:
        return self.health.problems
