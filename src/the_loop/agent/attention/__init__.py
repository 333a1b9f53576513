"""Attention over the agent layer: the states a session is in, the screen detector, prompts and
answers, the hook channel's receiving side, and the notices that tell a person (rendered by the
outbox).
"""

from __future__ import annotations

__all__ = [
    "answer",
    "channel",
    "notice",
    "reports",
    "screen",
    "service",
    "spawn",
]
