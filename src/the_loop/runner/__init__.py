"""Runners: where a harness runs. ``tmux`` (interactive, default) and ``process`` (headless).

Runners run programs and report what happened; they emit no events and touch no database —
the session service records what they return.
"""

from __future__ import annotations

from the_loop.runner.process import ProcessResult, ProcessRunner
from the_loop.runner.tmux import (
    AttachCommand,
    Delivery,
    PaneInfo,
    PaneStatus,
    Probe,
    SpawnResult,
    TerminateReport,
    TmuxOutcome,
    TmuxResult,
    TmuxRunner,
)

__all__ = [
    "AttachCommand",
    "Delivery",
    "PaneInfo",
    "PaneStatus",
    "Probe",
    "ProcessResult",
    "ProcessRunner",
    "SpawnResult",
    "TerminateReport",
    "TmuxOutcome",
    "TmuxResult",
    "TmuxRunner",
]
