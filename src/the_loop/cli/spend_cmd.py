"""``the-loop sessions extend`` and ``the-loop usage``: budgets and meters from the terminal."""

from __future__ import annotations

import typer

from the_loop.cli import common
from the_loop.pricing import cost_text


def extend(
    ref: str = typer.Argument(..., help="github:OWNER/REPO#N or a session id"),
    usd: float = typer.Option(0.0, "--usd", min=0, help="Dollars added to its budgets."),
    turns: int = typer.Option(0, "--turns", min=0, help="Turns added to budgets.maxTurns."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Raise a session's budget; a stopped one resumes.

    What was kept for it meanwhile is delivered, in order.
    """
    from the_loop.work_items.spend import extend as run  # lazy: start-up (loads the agent layer)

    done = run(common.ctx(), ref, usd, turns)
    if fmt is common.Format.json:
        common.print_json(done)
        return
    print(
        f"extended {done.work_item} (session {done.session_id}): +${done.extra_usd:g}, "
        f"+{done.extra_turns} turns in all; spent "
        f"{cost_text(done.usage.cost_usd, done.usage.priced, '$')} in {done.usage.turns} turns"
    )
    if done.over_budget:
        print(f"still over budget: {done.over_budget}; the session stays stopped")
    elif done.resumed:
        print(f"resumed: {done.resumed}")


def usage(
    work_item: str | None = typer.Option(None, "--work-item", "-w", help="github:OWNER/REPO#N"),
    days: int = typer.Option(7, "--days", min=1, max=3660, help="The newest N days with usage."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Tokens, turns and estimated cost per day and work item."""
    from the_loop.agent.spend.usage import report  # lazy: start-up

    found = report(common.ctx(), work_item, days)
    if fmt is common.Format.json:
        common.print_json(found)
        return
    columns = ["", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "TURNS", "COST USD"]
    rows = [(d.day, *_figures(d)) for d in found.days]
    if found.item is not None:
        rows.insert(0, (found.work_item, *_figures(found.item)))
    if not rows:
        common.print_empty("usage", "it is read from the agents' transcripts after each turn")
        return
    common.print_table(columns, rows)


def _figures(u: object) -> tuple[object, ...]:
    from the_loop.store.usage import Usage  # lazy: start-up

    assert isinstance(u, Usage)
    cost = cost_text(u.cost_usd, u.priced)
    return (
        u.input_tokens,
        u.output_tokens,
        u.cache_creation_tokens,
        u.cache_read_tokens,
        u.turns,
        cost,
    )
