"""The ``budgets:``, ``sessions:`` and ``admission:`` sections: what agents may spend, when an
idle one is suspended, and how much memory must be free before one is started or resumed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from the_loop.pricing import DEFAULT_PRICES, Rates, longest_match, rates_of


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )


class ModelPrice(_Model):
    """The price of one model, in US dollars per million tokens of each kind."""

    input: float = Field(..., ge=0, description="USD per million input tokens.")
    output: float = Field(..., ge=0, description="USD per million output tokens.")
    cache_creation: float = Field(
        0.0, ge=0, description="USD per million tokens written to the prompt cache."
    )
    cache_read: float = Field(0.0, ge=0, description="USD per million tokens read from it.")

    @property
    def rates(self) -> Rates:
        return (self.input, self.output, self.cache_creation, self.cache_read)


class BudgetsConfig(_Model):
    """Spend: the price table behind the cost estimates, and the hard budgets."""

    prices: dict[str, ModelPrice] = Field(
        default_factory=dict,
        description=(
            "Per model (the name the harness records, or a prefix of it: the longest match "
            "wins): USD per million tokens. A model with no price counts tokens, not dollars, "
            "and its cost shows as unpriced."
        ),
    )
    default_prices: bool = Field(
        True,
        description=(
            "Price the models `prices` does not match with the-loop's built-in estimates for "
            "the built-in harnesses' current models (docs/spend.md); false: only `prices`."
        ),
    )
    per_session_usd: float | None = Field(
        None, gt=0, description="Stop a session at the end of the turn that reached this cost."
    )
    per_work_item_usd: float | None = Field(
        None, gt=0, description="The same, for all sessions of one work item together."
    )
    per_day_usd: float | None = Field(
        None, gt=0, description="The same, for everything spent on one UTC day."
    )
    max_turns: int | None = Field(
        None, ge=1, description="Stop a session at the end of this many turns."
    )

    def price(self, model: str) -> ModelPrice | None:
        """The price of MODEL: its exact entry, else the longest entry it starts with, else (with
        ``defaultPrices``) the built-in estimate it matches the same way."""
        own = longest_match(model, self.prices)
        if own is not None or not self.default_prices:
            return own
        found = longest_match(model, DEFAULT_PRICES)
        if found is None:
            return None
        return ModelPrice(
            input=found[0], output=found[1], cache_creation=found[2], cache_read=found[3]
        )

    def rates(self, model: str) -> Rates | None:
        """``price`` as the tuple ``pricing.tally`` adds up."""
        own = {name: p.rates for name, p in self.prices.items()}
        return rates_of(model, own, self.default_prices)

    @property
    def any_prices(self) -> bool:
        """Whether any model can have a price (own entries, or the built-in estimates)."""
        return bool(self.prices) or self.default_prices

    @property
    def usd_budgets(self) -> list[str]:
        """The dollar budgets that are set, by their config names."""
        budgets = (
            ("perSessionUsd", self.per_session_usd),
            ("perWorkItemUsd", self.per_work_item_usd),
            ("perDayUsd", self.per_day_usd),
        )
        return [name for name, limit in budgets if limit is not None]

    @property
    def any_usd(self) -> bool:
        return bool(self.usd_budgets)


class SessionsConfig(_Model):
    """Sessions that sleep when idle and wake on the next event or message."""

    suspend_after_minutes: float | None = Field(
        None,
        ge=0,
        description=(
            "A session (work-item or standing) waiting (turn finished, nothing pending) this "
            "long is suspended: its harness is terminated, pane and transcript kept; the next "
            "event (a standing session's next say) resumes it. "
            "Fractions are allowed (0.05 = 3 s); unset or 0 never suspends."
        ),
    )

    @property
    def suspend_after_seconds(self) -> float:
        """``suspendAfterMinutes`` in seconds; 0 when sessions are never suspended."""
        return (self.suspend_after_minutes or 0.0) * 60


class AdmissionConfig(_Model):
    """Memory-aware admission: spawns and resumes wait (FIFO) while memory is short."""

    min_free_memory_mb: int = Field(
        0, ge=0, description="Wait while the host's MemAvailable is below this (0: no check)."
    )
    max_agents_memory_mb: int | None = Field(
        None,
        ge=1,
        description="Wait while the live agents' memory is above: the anonymous resident "
        "memory of their pane process trees, what suspending them frees.",
    )

    @property
    def enabled(self) -> bool:
        return self.min_free_memory_mb > 0 or self.max_agents_memory_mb is not None
