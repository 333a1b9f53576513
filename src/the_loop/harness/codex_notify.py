"""Codex's turn-complete ``notify`` program, pointed at ``the-loop hook`` at spawn.

Codex runs the program named by its ``notify`` setting after every turn, with one JSON argument
(``{"type": "agent-turn-complete", "last-assistant-message": …}``). An interactive Codex the-loop
starts gets ``-c notify=[<hook argv>, "codex-notify", …]``: the hook records ``waiting`` with
the agent's last message (``the_loop.hook``). A ``notify`` program the operator set in
``$CODEX_HOME/config.toml`` is not lost: its argv follows ``codex-notify`` and the hook runs it
with the same JSON afterwards. Outside the-loop's agents (no ``THE_LOOP_AGENT`` in the
environment) the hook records nothing and only runs that program.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping

from the_loop.harness.claude_hooks import hook_argv
from the_loop.harness.codex_prep import CONFIG_FILE
from the_loop.harness.homes import codex_home

NOTIFY_MODE = "codex-notify"


def configured_notify(env: Mapping[str, str]) -> list[str]:
    """The ``notify`` argv of Codex's own ``config.toml`` (for ENV), empty when unset or
    unreadable."""
    path = codex_home(env) / CONFIG_FILE
    try:
        found = tomllib.loads(path.read_text(encoding="utf-8")).get("notify")
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        return []
    if isinstance(found, list) and found and all(isinstance(a, str) for a in found):
        return list(found)
    return []


def notify_args(env: Mapping[str, str], python: str | None = None) -> list[str]:
    """``["-c", "notify=[…]"]``: the hook first, then the operator's own program (if any).
    A JSON array of strings is a valid TOML array, which is what ``-c`` parses."""
    argv = [*hook_argv(python), NOTIFY_MODE, *configured_notify(env)]
    return ["-c", f"notify={json.dumps(argv)}"]


def is_notify_override(arg: str) -> bool:
    """True for a ``notify=…`` override an operator passed in the harness's args."""
    return arg.replace(" ", "").startswith("notify=")
