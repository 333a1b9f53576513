"""Which hard budget an agent has reached: ``budgets.maxTurns``, ``perSessionUsd``,
``perWorkItemUsd`` (work-item sessions only) and ``perDayUsd`` (everything spent on the UTC
day), each raised by the agent's extensions (``sessions extend``, ``standing extend``).

The budgets follow the item (decision 0050): a work-item session's ``perSessionUsd`` and
``maxTurns`` count every session of its item, and every extension given to any of them, so a
``close`` and a new start do not begin again from zero; only ``extend`` gives room. A standing
session's count everything spent under its name.

The spend policy (``agent.spend.policy``) asks it at the end of a turn, for every kind of
session."""

from __future__ import annotations

from collections.abc import Callable

from the_loop.agent.spend import usage
from the_loop.context import Ctx
from the_loop.store import usage as store


def reached(ctx: Ctx, agent: str, work_item: str | None, *, day: bool = True) -> str | None:
    """Which budget AGENT (of WORK_ITEM, None for a standing session) has reached with its
    extensions, as one line naming the budget and the figure; None when none. Not ``perDayUsd``
    unless DAY."""
    budgets = ctx.config.budgets
    conn = ctx.db.connect()
    if work_item is None:
        spend = store.get_spend(conn, agent)
        mine = usage.of_agent(ctx, agent)
        extra_usd, extra_turns = spend.extra_usd, spend.extra_turns
    else:  # the item's sessions together: a new session starts where the last one stopped
        mine = usage.of_work_item(ctx, work_item)
        extra_usd, extra_turns = store.extras_of_work_item(conn, work_item)
    if budgets.max_turns is not None and mine.turns >= budgets.max_turns + extra_turns:
        return f"{mine.turns} turns reached budgets.maxTurns {budgets.max_turns + extra_turns}"
    limits: list[tuple[str, float | None, Callable[[], float]]] = [
        ("perSessionUsd", budgets.per_session_usd, lambda: mine.cost_usd or 0.0),
    ]
    if work_item is not None:
        limits.append(("perWorkItemUsd", budgets.per_work_item_usd, lambda: mine.cost_usd or 0.0))
    if day:
        today = (
            "perDayUsd",
            budgets.per_day_usd,
            lambda: usage.of_day(ctx, usage.today()).cost_usd or 0.0,
        )
        limits.append(today)
    for name, limit, spent in limits:
        if limit is None:
            continue
        allowed, cost = limit + extra_usd, spent()
        if cost >= allowed:
            return f"${cost:.4f} reached budgets.{name} ${allowed:.2f}"
    return None
