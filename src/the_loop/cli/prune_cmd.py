"""``the-loop prune``: remove closed sessions' dead panes and stale worktrees by age."""

from __future__ import annotations

import typer

from the_loop.cli import common


def prune(
    older_than: str = typer.Option(
        "7d", "--older-than", help="Sessions closed longer ago than this: 30m, 12h, 7d or ISO."
    ),
    dry_run: bool = typer.Option(False, "--dry-run", "-n", help="Only say what would go."),
    fmt: common.Format = typer.Option(common.Format.table, "--format"),
) -> None:
    """Remove closed sessions' dead panes and worktrees, by age.

    A closed session's tmux session (its screen, kept read-only) is killed only when its
    pane is dead and still the closed session's own; a worktree only when its item has no
    live session. Live agents and standing sessions are never touched.
    """
    # lazy: start-up
    from the_loop.work_items.prune import cutoff_of
    from the_loop.work_items.prune import prune as run_prune

    done = run_prune(common.ctx(), cutoff_of(older_than), dry_run)
    if fmt is common.Format.json:
        common.print_json(done)
        return
    verb = "would remove" if dry_run else "removed"
    for item in done.panes:
        print(f"{verb} the closed pane of {item}")
    for item in done.worktrees:
        print(f"{verb} the worktree of {item}")
    if not done.panes and not done.worktrees:
        print(f"nothing closed before {older_than} ago to prune")
