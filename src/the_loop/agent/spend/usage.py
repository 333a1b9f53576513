"""Usage meters: what each agent session, each work item and each day spent, priced.

The figures are what the harness recorded (read by ``agent.spend.meter`` in the daemon at the end
of every turn); this module sums and prices them from ``budgets.prices`` for every surface:
the session lists, ``standing list``, ``GET /api/v1/usage``, MCP ``get_session``. It reads only
the store (the CLI's lists load it).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

from the_loop.config.spend import BudgetsConfig
from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.pricing import tally
from the_loop.refs import WorkItemRef
from the_loop.store import usage as store
from the_loop.store.usage import ModelSum, Usage
from the_loop.wire import Wire

__all__ = ["DayUsage", "Usage", "UsageReport", "day_of", "priced", "report", "today"]


class DayUsage(Usage):
    """One UTC day's usage."""

    day: str


class UsageReport(Wire):
    """``GET /api/v1/usage`` and ``the-loop usage``: one work item's usage (when asked) and the
    newest days."""

    work_item: str | None = None
    item: Usage | None = None
    days: list[DayUsage] = []


def day_of(ts: float) -> str:
    """The UTC day (``YYYY-MM-DD``) of epoch seconds TS."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d")


def today() -> str:
    return day_of(time.time())


def priced(sums: list[ModelSum], budgets: BudgetsConfig) -> Usage:
    """SUMS (by model) added up, with the cost of the priced models (``pricing.tally``): a
    null cost when none of the tokens has a price, ``priced`` false when some have none."""
    t = tally(sums, budgets.rates)
    return Usage(
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cache_creation_tokens=t.cache_creation_tokens,
        cache_read_tokens=t.cache_read_tokens,
        turns=t.turns,
        cost_usd=t.cost_usd,
        priced=t.priced,
        models=t.models,
        unpriced_models=t.unpriced_models,
    )


def of_agents(ctx: Ctx, agents: list[str]) -> dict[str, Usage]:
    """The usage of each of AGENTS (an agent with nothing recorded gets zeros)."""
    found = store.sums_of_agents(ctx.db.connect(), agents)
    budgets = ctx.config.budgets
    return {a: priced(found.get(a, []), budgets) for a in agents}


def of_agent(ctx: Ctx, agent: str) -> Usage:
    return of_agents(ctx, [agent])[agent]


def of_work_item(ctx: Ctx, work_item: str) -> Usage:
    """Every session of WORK_ITEM together (respawns and earlier sessions included)."""
    return priced(store.sums_of_work_item(ctx.db.connect(), work_item), ctx.config.budgets)


def of_day(ctx: Ctx, day: str) -> DayUsage:
    sums = store.sums_of_day(ctx.db.connect(), day)
    return DayUsage(day=day, **priced(sums, ctx.config.budgets).model_dump(by_alias=False))


def report(ctx: Ctx, work_item: str | None = None, days: int = 7) -> UsageReport:
    """WORK_ITEM's usage (when given) and the newest DAYS days with usage, newest first."""
    if days < 1 or days > 3660:
        raise BadInput(f"invalid days {days}: 1 to 3660")
    item = str(WorkItemRef.parse(work_item)) if work_item else None
    wanted = store.days(ctx.db.connect(), days)
    return UsageReport(
        work_item=item,
        item=of_work_item(ctx, item) if item else None,
        days=[of_day(ctx, d) for d in wanted],
    )
