"""The agent-session layer shared by work-item sessions and standing sessions (see ``core``)."""

from __future__ import annotations

from the_loop.agent.core import (
    Revive,
    drop_pending,
    enqueue,
    flush,
    forget_ready,
    hold,
    kill,
    owned,
    probe,
    refuse_foreign,
    resume,
    screen,
    start,
    terminate,
)
from the_loop.agent.model import Agent, AgentKind, Flushed, Resumed, Started
from the_loop.agent.runners import (
    AgentRunner,
    AlreadyRunning,
    adapter_for,
    runner_for,
    tmux_agents,
    transcript_path,
)

__all__ = [
    "Agent",
    "AgentKind",
    "AgentRunner",
    "AlreadyRunning",
    "Flushed",
    "Resumed",
    "Revive",
    "Started",
    "adapter_for",
    "drop_pending",
    "enqueue",
    "flush",
    "forget_ready",
    "hold",
    "kill",
    "owned",
    "probe",
    "refuse_foreign",
    "resume",
    "runner_for",
    "screen",
    "start",
    "terminate",
    "tmux_agents",
    "transcript_path",
]
