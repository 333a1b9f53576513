"""What surfaces show: sessions, dashboard, status, health, metrics, doctor, conversations."""

from __future__ import annotations

__all__ = [
    "conversation",
    "dashboard",
    "doctor",
    "health",
    "metrics",
    "sessions",
    "status",
]
