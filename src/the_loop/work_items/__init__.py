"""The work-item policy: spawn, deliver, close, pause and queue sessions for GitHub and Slack work
items; their records, workspaces, start and prune.
"""

from __future__ import annotations

__all__ = [
    "kind",
    "moves",
    "notice",
    "prune",
    "records",
    "service",
    "spend",
    "start",
    "workspace",
]
