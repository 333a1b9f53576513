"""Spend over the agent layer: meters, usage and transcripts, budgets, holds (suspend and wake),
admission by measured memory — one policy for every kind of session.
"""

from __future__ import annotations

__all__ = [
    "admission",
    "budgets",
    "holds",
    "memory",
    "meter",
    "service",
    "transcripts",
    "usage",
]
