"""``the-loop sessions extend`` and ``the-loop usage``: budgets and meters from the terminal."""

from __future__ import annotations

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option
from the_loop.pricing import cost_text


@command("extend")
@click.argument("ref", help="github:OWNER/REPO#N or a session id")
@click.option(
    "--usd", type=click.FloatRange(min=0), default=0.0, help="Dollars added to its budgets."
)
@click.option(
    "--turns", type=click.IntRange(min=0), default=0, help="Turns added to budgets.maxTurns."
)
@format_option()
def extend(ref: str, usd: float, turns: int, fmt: str) -> None:
    """Raise a session's budget; a stopped one resumes.

    What was kept for it meanwhile is delivered, in order.
    """
    from the_loop.work_items.spend import extend as run  # lazy: start-up (loads the agent layer)

    done = run(common.ctx(), ref, usd, turns)
    if fmt == "json":
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


@command("usage")
@click.option("--work-item", "-w", default=None, help="github:OWNER/REPO#N")
@click.option(
    "--days", type=click.IntRange(1, 3660), default=7, help="The newest N days with usage."
)
@format_option()
def usage(work_item: str | None, days: int, fmt: str) -> None:
    """Tokens, turns and estimated cost per day and work item."""
    from the_loop.agent.spend.usage import report  # lazy: start-up

    found = report(common.ctx(), work_item, days)
    if fmt == "json":
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
    from the_loop.agent.spend import Usage  # lazy: start-up

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
