"""Spend over the agent layer: meters, usage and transcripts, budgets, holds (suspend and wake),
admission by measured memory; the spend policy (``policy``): one for every kind of session.

``Usage`` is the tokens, turns and cost its reports add up; it loads on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.store.usage import Usage

__all__ = [
    "Usage",
    "admission",
    "budgets",
    "holds",
    "memory",
    "meter",
    "policy",
    "service",
    "transcripts",
    "usage",
]


def __getattr__(name: str) -> object:
    if name == "Usage":
        # lazy: start-up (the store's usage module is not on every path through the layer)
        from the_loop.store import usage

        return usage.Usage
    raise AttributeError(f"module 'the_loop.agent.spend' has no attribute {name!r}")
