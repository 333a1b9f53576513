"""Which hard budget an agent has reached: ``budgets.maxTurns``, ``perSessionUsd``,
``perWorkItemUsd`` (work-item sessions only) and ``perDayUsd`` (everything spent on the UTC
day), each raised by the agent's own extensions (``sessions extend``, ``standing extend``).

Work-item sessions (``the_loop.spend``) and standing sessions (``the_loop.standing_spend``)
ask the same question at the end of a turn."""

from __future__ import annotations

from collections.abc import Callable

from the_loop import usage
from the_loop.context import Ctx
from the_loop.store import usage as store


def reached(ctx: Ctx, agent: str, work_item: str | None) -> str | None:
    """Which budget AGENT (of WORK_ITEM, None for a standing session) has reached with its
    extensions, as one line naming the budget and the figure; None when none."""
    budgets = ctx.config.budgets
    spend = store.get_spend(ctx.db.connect(), agent)
    mine = usage.of_agent(ctx, agent)
    if budgets.max_turns is not None and mine.turns >= budgets.max_turns + spend.extra_turns:
        return (
            f"{mine.turns} turns reached budgets.maxTurns {budgets.max_turns + spend.extra_turns}"
        )
    limits: list[tuple[str, float | None, Callable[[], float]]] = [
        ("perSessionUsd", budgets.per_session_usd, lambda: mine.cost_usd),
        ("perDayUsd", budgets.per_day_usd, lambda: usage.of_day(ctx, usage.today()).cost_usd),
    ]
    if work_item is not None:
        item = ("perWorkItemUsd", budgets.per_work_item_usd, lambda: _item_cost(ctx, work_item))
        limits.insert(1, item)
    for name, limit, spent in limits:
        if limit is None:
            continue
        allowed, cost = limit + spend.extra_usd, spent()
        if cost >= allowed:
            return f"${cost:.4f} reached budgets.{name} ${allowed:.2f}"
    return None


def _item_cost(ctx: Ctx, work_item: str) -> float:
    return usage.of_work_item(ctx, work_item).cost_usd
