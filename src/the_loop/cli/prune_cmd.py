"""``the-loop prune``: remove closed sessions' dead panes and stale worktrees by age."""

from __future__ import annotations

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option


@command("prune")
@click.option(
    "--older-than",
    default="7d",
    help="Sessions closed longer ago than this: 30m, 12h, 7d or ISO.",
)
@click.option("--dry-run", "-n", is_flag=True, help="Only say what would go.")
@format_option()
def prune(older_than: str, dry_run: bool, fmt: str) -> None:
    """Remove closed sessions' dead panes and worktrees, by age.

    A closed session's tmux session (its screen, kept read-only) is killed only when its
    pane is dead and still the closed session's own; a worktree only when its item has no
    live session. Live agents and standing sessions are never touched.
    """
    # lazy: start-up
    from the_loop.work_items.prune import cutoff_of
    from the_loop.work_items.prune import prune as run_prune

    done = run_prune(common.ctx(), cutoff_of(older_than), dry_run)
    if fmt == "json":
        common.print_json(done)
        return
    verb = "would remove" if dry_run else "removed"
    for item in done.panes:
        print(f"{verb} the closed pane of {item}")
    for item in done.worktrees:
        print(f"{verb} the worktree of {item}")
    if not done.panes and not done.worktrees:
        print(f"nothing closed before {older_than} ago to prune")
