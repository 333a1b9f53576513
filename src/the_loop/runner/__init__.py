"""Runners: where a harness runs. ``tmux`` (interactive, default) and ``process`` (headless).

Runners run programs and report what happened; they emit no events and touch no database —
the session service records what they return.
"""

from __future__ import annotations

from dataclasses import dataclass

from the_loop.config import Config
from the_loop.runner.base import KeyedLock
from the_loop.runner.outcomes import (
    Answer,
    AttachCommand,
    BufferState,
    Capture,
    Delivery,
    Killed,
    Outcome,
    Owner,
    Probe,
    SpawnResult,
    Staged,
)
from the_loop.runner.process import ProcessResult, ProcessRunner
from the_loop.runner.tmux import (
    PaneInfo,
    PaneStatus,
    TerminateReport,
    TmuxOutcome,
    TmuxResult,
    TmuxRunner,
)
from the_loop.runner.tmux_core import framed


@dataclass
class Runners:
    """The runners of one config: tmux, process, and the per-item processing locks."""

    tmux: TmuxRunner
    process: ProcessRunner
    locks: KeyedLock

    @classmethod
    def from_config(cls, config: Config) -> Runners:
        work_dir = config.state_path / "run"
        return cls(
            tmux=TmuxRunner.from_config(config, work_dir=work_dir),
            process=ProcessRunner(
                work_dir=work_dir, kill_grace=config.tmux.harness_kill_grace_seconds
            ),
            locks=KeyedLock(work_dir / "locks", "item"),
        )


__all__ = [
    "Answer",
    "AttachCommand",
    "BufferState",
    "Capture",
    "Delivery",
    "Killed",
    "Outcome",
    "Owner",
    "PaneInfo",
    "PaneStatus",
    "Probe",
    "ProcessResult",
    "ProcessRunner",
    "Runners",
    "SpawnResult",
    "Staged",
    "TerminateReport",
    "TmuxOutcome",
    "TmuxResult",
    "TmuxRunner",
    "framed",
    "limits",
    "sandbox",
    "tmux",
    "tmux_core",
    "tmux_screens",
    "tmux_watch",
]
