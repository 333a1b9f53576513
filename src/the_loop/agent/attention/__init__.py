"""Attention over the agent layer: the states a session is in, the screen detector, prompts and
answers, the hook channel's receiving side, and the pass that tells a person (each kind of session
registers whom and where, ``notice.on_notice``).
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
