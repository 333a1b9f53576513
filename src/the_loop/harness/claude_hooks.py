"""The Claude Code settings that report an agent's attention: hooks that run ``the-loop hook``.

Passed at spawn with ``--settings <json>`` (the CLI takes a file or a JSON string). Each hook
runs ``the-loop hook`` (the script beside this interpreter); the hook reads the agent's key and
the database from the environment the-loop gives the agent, and does nothing without them.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

HOOK_EVENTS = ("SessionStart", "UserPromptSubmit", "Stop", "Notification", "SessionEnd")
PERMISSION_EVENT = "PermissionRequest"
PERMISSION_HOOK_TIMEOUT = 86_400
"""Seconds Claude Code lets the permission hook wait; the hook's own limit is
``attention.answerTimeoutMinutes`` (given in its environment), always shorter."""


def hook_command(python: str | None = None) -> str:
    """The shell command a hook runs: the ``the-loop`` script beside PYTHON (default: this
    interpreter) when there is one (it starts faster than ``-m``), else ``PYTHON -m the_loop``."""
    interpreter = Path(python or sys.executable)
    script = interpreter.with_name("the-loop")
    if script.is_file() and os.access(script, os.X_OK):
        return shlex.join([str(script), "hook"])
    return shlex.join([str(interpreter), "-m", "the_loop", "hook"])


def hook_settings(command: str | None = None) -> dict[str, Any]:
    """The ``hooks`` settings: every attention event, and the permission request with no time
    limit of the CLI's own."""
    run = command or hook_command()
    hooks: dict[str, Any] = {
        event: [{"hooks": [{"type": "command", "command": run}]}] for event in HOOK_EVENTS
    }
    hooks[PERMISSION_EVENT] = [
        {
            "matcher": "*",
            "hooks": [{"type": "command", "command": run, "timeout": PERMISSION_HOOK_TIMEOUT}],
        }
    ]
    return {"hooks": hooks}


def settings_argv(command: str | None = None) -> list[str]:
    """``["--settings", <json>]`` for an interactive Claude Code launch."""
    return ["--settings", json.dumps(hook_settings(command), separators=(",", ":"))]
