"""The standing-session policy: declared and created sessions that belong to no ticket, and their
verbs, views, spend and node pinning.
"""

from __future__ import annotations

__all__ = [
    "defs",
    "kind",
    "node",
    "service",
    "spend",
    "terminal",
    "views",
]
