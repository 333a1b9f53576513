"""Finding work-item sessions: by id, by work item ref, or listed. Light on purpose (only the
store), so read-only commands such as ``sessions list`` do not load the agent layer."""

from __future__ import annotations

from the_loop.agent.attention.service import SessionAttention, not_started, of_sessions
from the_loop.agent.spend import usage
from the_loop.context import Ctx
from the_loop.errors import NotFound
from the_loop.refs import WorkItemRef, names_work_item
from the_loop.store import sessions as store
from the_loop.store import usage as usage_store
from the_loop.store.sessions import SessionRecord, SessionStatus


def with_spend(ctx: Ctx, records: list[SessionRecord]) -> list[SessionRecord]:
    """RECORDS with their usage and hold filled in."""
    ids = [r.id for r in records]
    used = usage.of_agents(ctx, ids)
    held = usage_store.holds_of(ctx.db.connect(), ids)
    for rec in records:
        rec.usage, rec.hold = used[rec.id], held.get(rec.id) if rec.live else None
    return records


class SessionSummary(SessionRecord):
    """A session record with its ``attention`` (None until the agent reported any)."""

    attention: SessionAttention | None = None


def summaries(ctx: Ctx, records: list[SessionRecord]) -> list[SessionSummary]:
    """RECORDS with their attention (one query for all of them). A queued session has none:
    its agent has not started (one held over budget says so)."""
    found = of_sessions(ctx, [(r.id, r.live) for r in records])
    return [
        SessionSummary(**r.model_dump(by_alias=False), attention=_shown(r, found[r.id]))
        for r in records
    ]


def _shown(rec: SessionRecord, attention: SessionAttention | None) -> SessionAttention | None:
    return None if attention is None or not_started(rec, attention.state) else attention


def get(ctx: Ctx, session_id: str) -> SessionRecord:
    """The session SESSION_ID; ``NotFound`` otherwise."""
    rec = store.get(ctx.db.connect(), session_id)
    if rec is None:
        raise NotFound(f"no session {session_id}")
    return with_spend(ctx, [rec])[0]


def resolve(ctx: Ctx, ref_or_id: str) -> SessionRecord:
    """A session by work item ref (its live one, else its latest) or by session id."""
    conn = ctx.db.connect()
    if names_work_item(ref_or_id):
        ref = WorkItemRef.parse(ref_or_id)
        rec = store.latest_for(conn, str(ref))
        if rec is None:
            raise NotFound(f"no session for {ref}")
        return with_spend(ctx, [rec])[0]
    rec = store.get(conn, ref_or_id)
    if rec is None:
        raise NotFound(
            f"no session {ref_or_id!r} (give github:OWNER/REPO#N, local:NAME or a session id)"
        )
    return with_spend(ctx, [rec])[0]


def list_sessions(
    ctx: Ctx, status: SessionStatus | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """Sessions with their usage, hold and attention, newest first, optionally of one STATUS
    and at most LIMIT."""
    return summaries(ctx, with_spend(ctx, store.list_sessions(ctx.db.connect(), status, limit)))
