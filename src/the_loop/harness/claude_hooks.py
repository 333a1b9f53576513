"""The Claude Code settings that report an agent's attention: hooks that run ``the-loop hook``.

Passed at spawn with ``--settings <json>`` (the CLI takes a file or a JSON string). Each hook
runs the hook of ``the-loop hook`` (``hook_command``); the hook reads the agent's key, its
per-session token and the hook channel's directory from the environment the-loop gives the
agent, reports to the daemon, and does nothing without them.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

HOOK_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "StopFailure",
    "Notification",
    "SessionEnd",
)
"""``StopFailure`` runs instead of ``Stop`` when an API error ended the turn (its ``error``:
``rate_limit``, ``authentication_failed``, ``billing_error``, ``overloaded``, …)."""
PERMISSION_EVENT = "PermissionRequest"
PERMISSION_HOOK_TIMEOUT = 86_400
"""Seconds Claude Code lets the permission hook wait for the daemon's decision (the daemon
applies ``attention.answerTimeoutMinutes`` itself)."""


def hook_argv(python: str | None = None) -> list[str]:
    """The argv a hook runs: PYTHON (default: this interpreter) in isolated mode without
    ``site`` (``-I -S``), importing the hook from the directory this package was loaded from.
    The hook needs only the standard library and ``the_loop``; skipping ``site`` (the
    environment's ``.pth`` files, the user's site dir) saves about 40 % of the hook's start-up,
    and a hook runs on every turn of every agent (bench/attention.py)."""
    package_root = str(Path(__file__).resolve().parents[2])
    code = (
        f"import sys;sys.path.insert(0,{package_root!r});"
        "from the_loop.hook import main;sys.exit(main(sys.argv[1:]))"
    )
    return [str(Path(python or sys.executable)), "-I", "-S", "-c", code]


def hook_command(python: str | None = None) -> str:
    """``hook_argv`` as the shell command Claude Code's settings take, run with ``exec``: Claude
    Code runs it with ``/bin/sh -c``, which would otherwise fork the interpreter as a child, so
    the hook's process is the one Claude Code spawned, and its start time (the report's ``at``,
    ``the_loop.hook.started_at``) is when Claude Code spawned the hook (decision 0076)."""
    return "exec " + shlex.join(hook_argv(python))


ASYNC_HOOK_EVENTS = ("SessionStart", "UserPromptSubmit")
"""Run without Claude Code waiting for them (``"async": true``): a prompt goes to the model
without waiting for the hook process (it waited for it on every prompt: bench/claude_agents.
py), and the input box shows without waiting for it at start. The daemon orders their reports
by when each hook started (``agent.attention.reports``). ``Stop`` (it carries the turn's last
message), ``Notification``, ``SessionEnd`` (an asynchronous one is killed when the CLI exits)
and the permission hook stay synchronous."""


def hook_settings(command: str | None = None) -> dict[str, Any]:
    """The ``hooks`` settings: every attention event (the ones in ``ASYNC_HOOK_EVENTS`` not
    waited for), and the permission request with no time limit of the CLI's own."""
    run = command or hook_command()
    hooks: dict[str, Any] = {}
    for event in HOOK_EVENTS:
        hook: dict[str, Any] = {"type": "command", "command": run}
        if event in ASYNC_HOOK_EVENTS:
            hook["async"] = True
        hooks[event] = [{"hooks": [hook]}]
    hooks[PERMISSION_EVENT] = [
        {
            "matcher": "*",
            "hooks": [{"type": "command", "command": run, "timeout": PERMISSION_HOOK_TIMEOUT}],
        }
    ]
    return {"hooks": hooks}


def settings_argv(command: str | None = None) -> list[str]:
    """``["--settings", <json>]`` for an interactive Claude Code launch: the attention hooks,
    and no "away summary". Claude Code asks the model for a recap when its terminal regains
    focus after a while; under the-loop the terminal's focus is a viewer's tmux client
    coming and going, so each look at an idle agent would cost a model call and put a recap
    on its screen that nobody asked for."""
    settings = {**hook_settings(command), "awaySummaryEnabled": False}
    return ["--settings", json.dumps(settings, separators=(",", ":"))]
