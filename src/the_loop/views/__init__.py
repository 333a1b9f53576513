"""What surfaces show: sessions, dashboard, status, health, metrics, doctor, conversations."""

from __future__ import annotations

__all__ = [
    "conversation",
    "counts",
    "dashboard",
    "doctor",
    "health",
    "metrics",
    "sessions",
    "status",
]
