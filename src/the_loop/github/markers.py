"""The self-marker the-loop puts on everything it posts to GitHub.

A comment or review carrying ``SELF_MARKER`` is never taken as work (SPEC §6, decision 2), so
the-loop's own words and an agent's marked replies never come back to it. The marker and its
helpers are defined once, with the work event (``the_loop.work``); this module is the name the
GitHub code imports them by.
"""

from __future__ import annotations

from the_loop.work import SELF_MARKER, has_self_marker, mark

__all__ = ["SELF_MARKER", "has_self_marker", "mark"]
