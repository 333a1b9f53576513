"""Several hosts through one database: nodes and their heartbeat, placement, peers."""

from __future__ import annotations

__all__ = [
    "loop",
    "nodes",
    "peers",
    "placement",
]
