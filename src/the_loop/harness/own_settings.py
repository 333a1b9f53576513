"""What the operator's own settings files of a harness say about where its model is: the
hosts a confined agent of that harness must reach (``sandbox.allowHosts``'s default) and the
model provider a Codex of theirs uses (``doctor``'s login check)."""

from __future__ import annotations

from collections.abc import Mapping

from the_loop.harness.claude_prep import settings_base_url
from the_loop.harness.codex_prep import own_provider, provider_urls

__all__ = ["model_urls", "own_provider"]


def model_urls(adapter: str, env: Mapping[str, str]) -> list[str]:
    """The model API addresses the operator's own settings files of ADAPTER name (ENV: the
    harness's environment): Codex's model providers (``config.toml``), Claude Code's
    ``ANTHROPIC_BASE_URL`` (``settings.json``); empty for other harnesses."""
    if adapter == "codex":
        return provider_urls(env)
    if adapter == "claude":
        return [url] if (url := settings_base_url(env)) else []
    return []
