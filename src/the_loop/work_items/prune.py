"""``the-loop prune``: remove what closed work-item sessions left behind, by age.

A closed session keeps its tmux session as a dead, read-only record of its screen
(``tmux.keepSessionOnClose``) and its worktree (unless ``workspaces.removeOnClose``). Both pile
up; ``prune`` removes those of sessions closed before a cutoff. A pane is killed only when it
is dead and still carries the closed session's own ownership mark (a newer session of the same
item, live or closed, is never touched); a worktree only when its item has no live session.
With ``workspaces.keepDays`` the daemon's hourly housekeeping prunes worktrees the same way
(``prune_worktrees``): the one place that decides which worktree may go.
"""

from __future__ import annotations

import time

from the_loop import agent as layer
from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.refs import WorkItemRef
from the_loop.store import sessions as store
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.wire import Wire
from the_loop.work_items import service as sessions
from the_loop.work_items import workspace

SOURCE = "prune"


class Pruned(Wire):
    """What ``prune`` removed (or, with ``dry_run``, would remove)."""

    cutoff: float
    dry_run: bool
    panes: list[str] = []
    """The work items whose dead tmux session was killed."""
    worktrees: list[str] = []
    """The work items whose worktree was removed."""


def prune(ctx: Ctx, cutoff: float, dry_run: bool = False, panes: bool = True) -> Pruned:
    """Remove the dead panes (unless not PANES) and the worktrees of sessions closed before
    CUTOFF (a Unix time); with DRY_RUN only say what would go. Never touches a live pane or
    another session's pane, nor the worktree of an item with a live session."""
    conn = ctx.db.connect()
    closed = store.list_sessions(conn, SessionStatus.closed, None)
    old = [r for r in closed if r.closed_at is not None and r.closed_at < cutoff]
    out = Pruned(cutoff=cutoff, dry_run=dry_run)
    for rec in old if panes else []:
        if _dead_pane_of(ctx, rec):
            out.panes.append(rec.work_item)
            if not dry_run:
                layer.kill(ctx, sessions.agent_of(rec), timeout=1)
    newest_closed = {r.work_item: r for r in reversed(closed)}  # newest wins
    for item, rec in newest_closed.items():
        stale = rec.closed_at is not None and rec.closed_at < cutoff
        if not stale or store.live_for(conn, item) is not None:
            continue
        ref = WorkItemRef.parse(item)
        if not _has_worktree(ctx, ref):
            continue
        out.worktrees.append(item)
        if not dry_run:
            workspace.remove(ctx.config, ref)
    if not dry_run and (out.panes or out.worktrees):
        ev.emit(
            ctx.db,
            "prune.done",
            source=SOURCE,
            panes=out.panes,
            worktrees=out.worktrees,
            cutoff=cutoff,
        )
    return out


def prune_worktrees(ctx: Ctx, now: float | None = None) -> Pruned | None:
    """Remove the worktrees of items whose sessions closed more than ``workspaces.keepDays``
    ago and that have no live session (None: no ``keepDays``, nothing is removed)."""
    days = ctx.config.workspaces.keep_days
    if days is None or not ctx.config.workspaces.enabled:
        return None
    return prune(ctx, (time.time() if now is None else now) - days * 86400.0, panes=False)


def _dead_pane_of(ctx: Ctx, rec: SessionRecord) -> bool:
    if rec.runner != "tmux" or not rec.tmux_target:
        return False
    agent = sessions.agent_of(rec)
    return layer.probe(ctx, agent) == "dead" and layer.owned(ctx, agent) is True


def _has_worktree(ctx: Ctx, ref: WorkItemRef) -> bool:
    if not ctx.config.workspaces.enabled or ref.is_local:
        return False
    return (ctx.config.workspace_root / ref.slug).exists()


def cutoff_of(older_than: str, now: float | None = None) -> float:
    """The cutoff for ``--older-than`` (``30s``/``15m``/``2h``/``7d`` or an ISO time)."""
    return ev.parse_since(older_than, now if now is not None else time.time())
