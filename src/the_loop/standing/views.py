"""What the standing sessions look like: ``list`` (declared then created, each with its live
status) and the health lines ``the-loop status`` shows for auto-start sessions."""

from __future__ import annotations

from datetime import UTC, datetime

from the_loop.agent import panes
from the_loop.agent.attention.service import of_sessions
from the_loop.agent.spend import usage
from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.refs import standing_key
from the_loop.runner import Probe
from the_loop.standing.defs import Definition, StandingView, ViewStatus, from_declared, from_record
from the_loop.standing.node import elsewhere, owner
from the_loop.store import standing as store
from the_loop.store import usage as usage_store
from the_loop.store.standing import StandingRecord, StandingSource, StandingStatus
from the_loop.store.usage import Spend


def list_standing(ctx: Ctx) -> list[StandingView]:
    """Declared (config order) then created (by name), each with its live status and its hold.
    A record left by a declaration since removed from the config is listed too, with a
    problem."""
    conn = ctx.db.connect()
    records = {rec.name: rec for rec in store.list_records(conn)}
    held = {s.agent: s for s in usage_store.held(conn)}
    targets = panes.targets(ctx)
    pairs = [
        (from_declared(ctx, index, entry), records.pop(entry.name, None))
        for index, entry in enumerate(ctx.config.standing.sessions)
    ]
    pairs += [(from_record(ctx, rec), rec) for rec in records.values()]
    views = [
        _view(ctx, defn, rec, targets, held.get(standing_key(defn.name))) for defn, rec in pairs
    ]
    keys = [standing_key(v.name) for v in views]
    used = usage.of_agents(ctx, keys)
    live = (ViewStatus.running, ViewStatus.suspended, ViewStatus.over_budget)
    found = of_sessions(ctx, [(standing_key(v.name), v.status in live) for v in views])
    return [
        v.model_copy(
            update={
                "usage": used[standing_key(v.name)],
                "attention": found[standing_key(v.name)],
            }
        )
        for v in views
    ]


def _view(
    ctx: Ctx,
    defn: Definition,
    rec: StandingRecord | None,
    targets: list[str] | None,
    spend: Spend | None,
) -> StandingView:
    hold = spend.hold if spend is not None else None
    remote = elsewhere(ctx, defn.name, rec)
    if remote is None:
        status, note = _status(ctx, defn.target, rec, targets, hold)
    else:
        status, note = _remote_status(ctx, defn.name, remote, rec, hold)
    if spend is not None and hold == usage_store.OVER_BUDGET:
        note = note or (
            f"over budget ({spend.hold_reason}); lift it with "
            f"`the-loop standing extend {defn.name} --usd N` (or `--turns N`)"
        )
    return StandingView(
        name=defn.name,
        source=defn.source,
        status=status,
        harness=defn.harness,
        args=defn.args,
        cwd=str(defn.cwd),
        target=defn.target,
        description=defn.description,
        auto_start=defn.auto_start,
        conversation_id=rec.conversation_id if rec else None,
        started_at=_when(rec.started_at if rec else None),
        last_message_at=_when(rec.last_message_at if rec else None),
        problems=defn.problems,
        note=note,
        hold=hold,
        node=owner(ctx, defn.name, rec) if ctx.db.shared else None,
    )


def _status(
    ctx: Ctx, target: str, rec: StandingRecord | None, targets: list[str] | None, hold: str | None
) -> tuple[ViewStatus, str | None]:
    """The live status; a session the spend policy stopped shows its HOLD (``suspended``,
    ``over-budget``) while its pane is not live, an over-budget one also once stopped."""
    resting = ViewStatus.stopped if rec and rec.conversation_id else ViewStatus.absent
    if hold == usage_store.OVER_BUDGET and rec is not None:
        resting = ViewStatus.over_budget
    elif hold == usage_store.SUSPENDED and rec is not None:
        resting = ViewStatus.suspended if rec.status is StandingStatus.running else resting
    if targets is None:
        return resting, "tmux did not answer; status unknown"
    if target not in targets:
        return resting, None
    if panes.probe(ctx, target) is not Probe.LIVE:
        return resting, None
    if rec is None or rec.status is StandingStatus.stopped:
        return resting, f"a live tmux session {target} that the-loop did not start"
    return ViewStatus.running, None


def _remote_status(
    ctx: Ctx, name: str, node: str, rec: StandingRecord | None, hold: str | None
) -> tuple[ViewStatus, str | None]:
    """The status of NAME, whose agent is on NODE: as its record says (this node cannot look
    at that tmux server); a note when NODE is dead."""
    resting = ViewStatus.stopped if rec and rec.conversation_id else ViewStatus.absent
    if rec is not None and hold == usage_store.OVER_BUDGET:
        resting = ViewStatus.over_budget
    if not nodes.alive(ctx, node):
        return resting, (
            f"its node {node} is dead; `the-loop standing start {name}` here takes it over"
        )
    if rec is None or rec.status is StandingStatus.stopped:
        return resting, None
    if hold == usage_store.SUSPENDED:
        return ViewStatus.suspended, None
    return (resting if hold else ViewStatus.running), None


def _when(ts: float | None) -> datetime | None:
    return datetime.fromtimestamp(ts, UTC) if ts is not None else None


def auto_start_names(ctx: Ctx) -> list[str]:
    declared = [entry.name for entry in ctx.config.standing.sessions if entry.auto_start]
    names = {entry.name for entry in ctx.config.standing.sessions}
    created = [
        rec.name
        for rec in store.list_records(ctx.db.connect())
        if rec.source is StandingSource.created and rec.auto_start and rec.name not in names
    ]
    return [*declared, *created]


def health_problems(ctx: Ctx) -> list[str]:
    """For ``the-loop status``: one line per auto-start session that is not running, when
    ``standing.enabled`` (empty otherwise)."""
    if not ctx.config.standing.enabled:
        return []
    wanted = set(auto_start_names(ctx))
    problems = []
    for view in list_standing(ctx):
        if view.name in wanted and view.status not in (ViewStatus.running, ViewStatus.suspended):
            detail = f" ({view.note})" if view.note else ""
            problems.append(
                f"standing session {view.name} (autoStart) is not running: {view.status}{detail}"
            )
    return problems
