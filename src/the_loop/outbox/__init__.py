"""Side effects on other systems, queued with the decision that caused them and drained with
retries: the drain, the GitHub write-backs, the Slack renderers and sender.
"""

from __future__ import annotations

__all__ = [
    "drain",
    "github",
    "notices",
    "slack",
    "slack_notices",
    "slack_sender",
]
