"""Spend over the agent layer: meters, usage and transcripts, budgets, holds (suspend and wake),
admission by measured memory; the spend policy (``policy``): one for every kind of session.
"""

from __future__ import annotations

__all__ = [
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
