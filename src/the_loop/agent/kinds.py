"""The kinds of agent session the layer serves, and where each registers what differs.

The layer's cross-cutting features act on ``Agent`` (delivery behind a dialog, spend, the
notices of a wait); what differs between a work-item session and a standing session — how its
held prompts are delivered, how its budgets and idle suspend are checked, whom a wait is told —
each kind's wing registers with the layer when it is imported (``agent.on_release``,
``agent.spend.policy.on_spend``, ``agent.attention.notice.on_notice``).

The built-in kinds are named here by module, the way a plugin host names its default plugins,
and imported on first use (``load``): the layer never imports the wings above it, and a pass of
the daemon, a command or a test that reaches one of these features finds every kind registered.
"""

from __future__ import annotations

import importlib
import threading

BUILTIN = ("the_loop.work_items.kind", "the_loop.standing.kind")
"""The modules that register the built-in kinds, in the order their hooks run."""

_LOADED = False
_LOCK = threading.Lock()


def load() -> None:
    """Import the built-in kinds' registrations (once per process)."""
    global _LOADED
    if _LOADED:
        return
    with _LOCK:
        if not _LOADED:
            for name in BUILTIN:
                importlib.import_module(name)
            _LOADED = True
