"""Work arriving: the durable inbox, its worker lanes and replay, and the sources that feed it
(the webhook's dispatch, the GitHub poller, Slack) — all handed to ``engine.decide`` as work events.
"""

from __future__ import annotations

__all__ = [
    "dispatch",
    "github_poller",
    "ops",
    "slack",
    "worker",
]
