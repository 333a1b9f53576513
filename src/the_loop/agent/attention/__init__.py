"""Attention over the agent layer: the states a session is in, the screen detector, prompts and
answers, the hook channel's receiving side, and the pass that tells a person (each kind of session
registers whom and where, ``notice.on_notice``).

``STATES`` names every state a session's attention can be in (what the surfaces filter by).
"""

from __future__ import annotations

from the_loop.store.attention import STATES

__all__ = [
    "STATES",
    "answer",
    "channel",
    "notice",
    "reports",
    "screen",
    "service",
    "spawn",
]
