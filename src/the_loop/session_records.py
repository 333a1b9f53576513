"""Finding work-item sessions: by id, by work item ref, or listed. Light on purpose (only the
store), so read-only commands such as ``sessions list`` do not load the agent layer."""

from __future__ import annotations

from the_loop.attention import SessionAttention, of_sessions
from the_loop.context import Ctx
from the_loop.errors import NotFound
from the_loop.refs import WorkItemRef
from the_loop.store import sessions as store
from the_loop.store.sessions import SessionRecord, SessionStatus


class SessionSummary(SessionRecord):
    """A session record with its ``attention`` (None until the agent reported any)."""

    attention: SessionAttention | None = None


def summaries(ctx: Ctx, records: list[SessionRecord]) -> list[SessionSummary]:
    """RECORDS with their attention (one query for all of them)."""
    found = of_sessions(ctx, [(r.id, r.live) for r in records])
    return [SessionSummary(**r.model_dump(by_alias=False), attention=found[r.id]) for r in records]


def get(ctx: Ctx, session_id: str) -> SessionRecord:
    """The session SESSION_ID; ``NotFound`` otherwise."""
    rec = store.get(ctx.db.connect(), session_id)
    if rec is None:
        raise NotFound(f"no session {session_id}")
    return rec


def resolve(ctx: Ctx, ref_or_id: str) -> SessionRecord:
    """A session by work item ref (its live one, else its latest) or by session id."""
    conn = ctx.db.connect()
    if "#" in ref_or_id:
        ref = WorkItemRef.parse(ref_or_id)
        rec = store.latest_for(conn, str(ref))
        if rec is None:
            raise NotFound(f"no session for {ref}")
        return rec
    rec = store.get(conn, ref_or_id)
    if rec is None:
        raise NotFound(f"no session {ref_or_id!r} (give github:OWNER/REPO#N or a session id)")
    return rec


def list_sessions(
    ctx: Ctx, status: SessionStatus | None = None, limit: int | None = None
) -> list[SessionSummary]:
    """Sessions with their attention, newest first, optionally of one STATUS and at most
    LIMIT."""
    return summaries(ctx, store.list_sessions(ctx.db.connect(), status, limit))
