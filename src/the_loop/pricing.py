"""Pricing usage, free of models: the built-in price estimates, the longest-prefix price lookup
and the sum of what a list of per-model token sums costs. Every surface looks up through
``rates_of`` and adds up through ``tally`` (``usage.priced``), and shows a cost through
``cost_text``, so a cost reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from the_loop.store.rows import ModelSum

T = TypeVar("T")
Rates = tuple[float, float, float, float]
"""USD per million input, output, cache-creation and cache-read tokens."""

DEFAULT_PRICES: dict[str, Rates] = {
    # Anthropic (Claude Code): the first-generation Opus 4 models cost more than later ones
    "claude-opus-4": (5.0, 25.0, 6.25, 0.5),
    "claude-opus-4-0": (15.0, 75.0, 18.75, 1.5),
    "claude-opus-4-1": (15.0, 75.0, 18.75, 1.5),
    "claude-opus-4-2025": (15.0, 75.0, 18.75, 1.5),
    "claude-sonnet-4": (3.0, 15.0, 3.75, 0.3),
    "claude-3-7-sonnet": (3.0, 15.0, 3.75, 0.3),
    "claude-haiku-4": (1.0, 5.0, 1.25, 0.1),
    "claude-3-5-haiku": (0.8, 4.0, 1.0, 0.08),
    # OpenAI (Codex): a cache write costs what input does
    "gpt-5": (1.25, 10.0, 1.25, 0.125),
    "gpt-5-mini": (0.25, 2.0, 0.25, 0.025),
    "gpt-5-nano": (0.05, 0.4, 0.05, 0.005),
    "gpt-5-codex-mini": (0.25, 2.0, 0.25, 0.025),
    "gpt-5.1-codex-mini": (0.25, 2.0, 0.25, 0.025),
    "gpt-5.2": (1.75, 14.0, 1.75, 0.175),
    "o4-mini": (1.1, 4.4, 1.1, 0.275),
    # Google (Gemini CLI): prompts up to 200k tokens
    "gemini-2.5-pro": (1.25, 10.0, 1.25, 0.125),
    "gemini-2.5-flash": (0.3, 2.5, 0.3, 0.03),
    "gemini-2.5-flash-lite": (0.1, 0.4, 0.1, 0.01),
    "gemini-3-pro": (2.0, 12.0, 2.0, 0.2),
    "gemini-3-flash": (0.5, 3.0, 0.5, 0.05),
}
"""The built-in estimates (``budgets.defaultPrices``) for the models the built-in harnesses use
by default, from the vendors' price pages: a model matches them only when ``budgets.prices``
has no entry for it. Check them against the vendors' pages (docs/spend.md)."""


def longest_match(model: str, table: Mapping[str, T]) -> T | None:
    """MODEL's exact entry in TABLE, else the longest entry it starts with, else None."""
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None


def rates_of(model: str, own: Mapping[str, Rates], defaults: bool) -> Rates | None:
    """The price of MODEL: its entry in OWN (``budgets.prices``, by ``longest_match``), else,
    when DEFAULTS, its entry in ``DEFAULT_PRICES``; None when neither prices it."""
    found = longest_match(model, own)
    if found is None and defaults:
        found = longest_match(model, DEFAULT_PRICES)
    return found


class Tally:
    """Tokens by kind, turns and cost added up (a plain class: see ``store.rows``)."""

    __slots__ = (
        "cache_creation_tokens",
        "cache_read_tokens",
        "cost_usd",
        "input_tokens",
        "models",
        "output_tokens",
        "priced",
        "turns",
        "unpriced_models",
    )

    def __init__(self) -> None:
        self.input_tokens = self.output_tokens = self.turns = 0
        self.cache_creation_tokens = self.cache_read_tokens = 0
        self.cost_usd: float | None = 0.0
        self.priced = True
        self.models: list[str] = []
        self.unpriced_models: list[str] = []


def tally(sums: list[ModelSum], rates: Callable[[str], Rates | None]) -> Tally:
    """SUMS (by model) added up, with the cost of the models RATES prices (rounded to 1e-6
    USD); a model with tokens and no price is listed as unpriced, and then ``priced`` is False.
    The cost is None when there are tokens and none of them has a price (unknown, not zero)."""
    out = Tally()
    cost = 0.0
    counted = False
    for s in sums:
        out.input_tokens += s.input_tokens
        out.output_tokens += s.output_tokens
        out.cache_creation_tokens += s.cache_creation_tokens
        out.cache_read_tokens += s.cache_read_tokens
        out.turns += s.turns
        if not s.model:
            continue
        out.models.append(s.model)
        price = rates(s.model)
        used = s.input_tokens or s.output_tokens or s.cache_creation_tokens or s.cache_read_tokens
        if price is None:
            if used:
                out.unpriced_models.append(s.model)
            continue
        counted = True
        cost += (
            s.input_tokens * price[0]
            + s.output_tokens * price[1]
            + s.cache_creation_tokens * price[2]
            + s.cache_read_tokens * price[3]
        ) / 1_000_000
    out.models.sort()
    out.unpriced_models.sort()
    out.priced = not out.unpriced_models
    out.cost_usd = None if out.unpriced_models and not counted else round(cost, 6)
    return out


UNPRICED = "unpriced"


def cost_text(cost: float | None, priced: bool = True, unit: str = "") -> str:
    """A cost for people: ``0.0123`` (with UNIT before it, e.g. ``$``); ``unpriced`` when no
    token has a price (never a made-up zero); ``0.0123 + unpriced`` when some have none."""
    if cost is None:
        return UNPRICED
    text = f"{unit}{cost:.4f}"
    return text if priced else f"{text} + {UNPRICED}"
