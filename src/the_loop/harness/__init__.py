"""Harness adapters: argv and environment for each agent CLI; they never run anything.

Importing this package registers the built-in adapters (``claude``, ``codex``, ``gemini``,
``cursor``, ``demo``, ``command``) through ``register_adapter``, the same door a custom adapter
uses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.errors import BadInput
from the_loop.harness import claude, codex, command, cursor, demo, gemini, own_settings
from the_loop.harness.base import (
    HarnessAdapter,
    InputBox,
    Launch,
    LaunchKind,
    LaunchSpec,
    RunnerKind,
    build_adapter,
    get_adapter,
    register_adapter,
    registered_adapters,
)
from the_loop.harness.binaries import (
    Located,
    configured_binary,
    harness_names,
    installed_programs,
    locate,
    with_located_binary,
)
from the_loop.harness.claude_prep import prepare_claude_config
from the_loop.harness.homes import claude_dir, codex_home, harness_dir

if TYPE_CHECKING:
    from the_loop.config import Config


def configured_adapter(
    config: Config, harness: str, args: list[str] | None = None
) -> HarnessAdapter:
    """The adapter of HARNESS under CONFIG; ARGS, when given, replace the configured extra argv."""
    harness_config = config.harness(harness)
    if args is not None:
        harness_config = harness_config.model_copy(update={"args": list(args)})
    return build_adapter(harness, harness_config)


def recorded_adapter(config: Config, harness: str) -> HarnessAdapter | None:
    """The adapter of HARNESS, a name recorded earlier (an agent's), under CONFIG; None when it
    is empty or names no adapter any more (its config was edited since)."""
    if not harness:
        return None
    try:
        return configured_adapter(config, harness)
    except BadInput:
        return None


__all__ = [
    "HarnessAdapter",
    "InputBox",
    "Launch",
    "LaunchKind",
    "LaunchSpec",
    "Located",
    "RunnerKind",
    "build_adapter",
    "claude",
    "claude_dir",
    "claude_hooks",
    "codex",
    "codex_home",
    "command",
    "configured_adapter",
    "configured_binary",
    "cursor",
    "demo",
    "gemini",
    "get_adapter",
    "harness_dir",
    "harness_names",
    "installed_programs",
    "locate",
    "own_settings",
    "prepare_claude_config",
    "recorded_adapter",
    "register_adapter",
    "registered_adapters",
    "with_located_binary",
]
