"""Pricing usage, free of models: the longest-prefix price lookup and the sum of what a list of
per-model token sums costs. ``usage.priced`` (every surface) and the CLI's fast path
(``cli.fast``) both add up through ``tally``, so a cost reads the same everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from the_loop.store.rows import ModelSum

T = TypeVar("T")
Rates = tuple[float, float, float, float]
"""USD per million input, output, cache-creation and cache-read tokens."""


def longest_match(model: str, table: Mapping[str, T]) -> T | None:
    """MODEL's exact entry in TABLE, else the longest entry it starts with, else None."""
    if model in table:
        return table[model]
    matches = [name for name in table if model.startswith(name)]
    return table[max(matches, key=len)] if matches else None


class Tally:
    """Tokens by kind, turns and cost added up (a plain class: see ``store.rows``)."""

    __slots__ = (
        "cache_creation_tokens",
        "cache_read_tokens",
        "cost_usd",
        "input_tokens",
        "models",
        "output_tokens",
        "turns",
        "unpriced_models",
    )

    def __init__(self) -> None:
        self.input_tokens = self.output_tokens = self.turns = 0
        self.cache_creation_tokens = self.cache_read_tokens = 0
        self.cost_usd = 0.0
        self.models: list[str] = []
        self.unpriced_models: list[str] = []


def tally(sums: list[ModelSum], rates: Callable[[str], Rates | None]) -> Tally:
    """SUMS (by model) added up, with the cost of the models RATES prices (rounded to 1e-6
    USD); a model with tokens and no price is listed as unpriced."""
    out = Tally()
    cost = 0.0
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
        if price is None:
            if s.input_tokens or s.output_tokens or s.cache_creation_tokens or s.cache_read_tokens:
                out.unpriced_models.append(s.model)
            continue
        cost += (
            s.input_tokens * price[0]
            + s.output_tokens * price[1]
            + s.cache_creation_tokens * price[2]
            + s.cache_read_tokens * price[3]
        ) / 1_000_000
    out.cost_usd = round(cost, 6)
    out.models.sort()
    out.unpriced_models.sort()
    return out
