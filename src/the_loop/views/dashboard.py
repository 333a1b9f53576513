"""What the dashboard's pages show, built from the same core functions the API and the CLI use.

- ``session_rows``: the Sessions page (a session with its attention: state, question, since);
- ``session_page``: one session with its attention, the item's events and its screen;
- ``standing_page``: one standing session with its attention;
- ``status_page``: the Status page (health, doctor, poller, inbox, outbox).

Each returns plain typed values; the web edge only renders them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from the_loop import events
from the_loop.agent import waiting_detail
from the_loop.agent.attention import service as attention
from the_loop.agent.attention.service import AttentionView
from the_loop.context import Ctx
from the_loop.errors import BadInput, LoopError
from the_loop.intake.ops import inbox_items
from the_loop.outbox import drain as outbox
from the_loop.refs import standing_key
from the_loop.standing.service import StandingView
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store
from the_loop.store.inbox import InboxItem, InboxStatus
from the_loop.store.outbox import OutboxItem
from the_loop.store.poll import CycleRecord, last_cycle
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.views import doctor
from the_loop.views import sessions as views
from the_loop.views.doctor import DoctorReport
from the_loop.views.health import Health, WorktreesDisk
from the_loop.views.sessions import SessionView
from the_loop.views.status import health
from the_loop.work_items import records as session_records
from the_loop.work_items import workspace

SESSION_LIMIT = 500
"""The Sessions page shows at most this many, newest first."""


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One line of the Sessions page: the record, its repository and its attention (None when
    nothing was recorded, and for a session that is no longer live: its state is ``exited``)."""

    session: SessionRecord
    repo: str
    attention: attention_store.Row | None
    """As stored: ``state`` and the ``prompt`` waited on (a page of 200 rows builds no view
    models for them)."""

    @property
    def attention_state(self) -> str:
        if not self.session.live:
            return attention_store.EXITED
        return self.attention.state if self.attention else "-"


def repo_of(work_item: str) -> str:
    """``OWNER/REPO`` of a stored work item ref (``github:[HOST/]OWNER/REPO#N``, written by
    ``WorkItemRef``, so already valid): the path without the host and the number; ``""`` for
    a ``local:NAME`` item, which has no repository."""
    if not work_item.startswith("github:"):
        return ""
    path = work_item.removeprefix("github:").partition("#")[0]
    return "/".join(path.split("/")[-2:])


def session_rows(
    ctx: Ctx, status: SessionStatus | None = None, limit: int = SESSION_LIMIT
) -> list[SessionRow]:
    """Sessions newest first (of STATUS, when given) with their usage and attention (the
    attention as stored rows: no view models for a page of hundreds)."""
    conn = ctx.db.connect()
    records = session_records.with_spend(ctx, session_store.list_sessions(conn, status, limit))
    live = [rec.id for rec in records if rec.live]
    kept = {row.agent: row for row in attention_store.rows(conn, live)}
    return [SessionRow(rec, repo_of(rec.work_item), kept.get(rec.id)) for rec in records]


def narrow(
    rows: list[SessionRow], attention_state: str | None = None, repo: str | None = None
) -> list[SessionRow]:
    """ROWS whose attention is ATTENTION_STATE (one of ``the_loop.store.attention.STATES``, or
    ``-`` for none recorded) and whose repository is REPO (``OWNER/REPO``), when given."""
    if attention_state is not None and attention_state not in (*attention_store.STATES, "-"):
        raise BadInput(
            f"invalid attention {attention_state!r}: {', '.join(attention_store.STATES)}"
        )
    return [
        r
        for r in rows
        if (not repo or r.repo == repo)
        and (attention_state is None or r.attention_state == attention_state)
    ]


def repos(rows: list[SessionRow]) -> list[str]:
    """The repositories of ROWS, sorted, each once (the Sessions page's repo filter)."""
    return sorted({r.repo for r in rows if r.repo})


@dataclass(frozen=True, slots=True)
class SessionPage:
    """The Session page: the session, its attention, its work item's events, its screen."""

    session: SessionView
    attention: AttentionView | None
    events: list[events.Event]
    screen: str
    waiting: str = ""
    """The messages to it not delivered yet, and what holds them ("" when none)."""


def session_page(ctx: Ctx, session_id: str, event_limit: int = 30) -> SessionPage:
    """Session SESSION_ID as its page shows it; ``NotFound`` for an unknown id."""
    view = views.session_view(ctx, session_id)
    row = attention_store.get(ctx.db.connect(), view.id)
    state = None if view.live else attention_store.EXITED
    if view.attention is None:  # nothing recorded, or queued: not started
        row = None
    found = attention.view_of(row, state=state) if row is not None else None
    flt = events.parse_filter(work_item=view.work_item, limit=event_limit)
    screen = ""
    if view.pane in ("live", "dead"):
        screen = views.session_screen(ctx, view.id, 60).text
    elif view.pane == "elsewhere":  # relayed from its node when both have the cluster token
        with contextlib.suppress(LoopError):  # no token, or the node did not answer: the note
            screen = views.session_screen(ctx, view.id, 60).text
    waiting = waiting_detail(ctx, view.id, view.id) if view.live else ""
    return SessionPage(view, found, events.query(ctx.db, flt), screen, waiting)


@dataclass(frozen=True, slots=True)
class StandingPage:
    """A standing session's page: the session, its attention (None when nothing was recorded
    or it is not running), the messages to it not delivered yet ("" when none)."""

    standing: StandingView
    attention: AttentionView | None
    waiting: str


def standing_page(ctx: Ctx, name: str) -> StandingPage:
    """Standing session NAME as its page shows it; ``NotFound``/``BadInput`` as
    ``views.standing_view``."""
    view = views.standing_view(ctx, name)
    key = standing_key(name)
    row = attention_store.get(ctx.db.connect(), key)
    running = view.status.value == "running"
    found = attention.view_of(row) if row is not None and running else None
    return StandingPage(view, found, waiting_detail(ctx, key, name))


@dataclass(frozen=True, slots=True)
class StatusPage:
    """The Status page: health, the doctor's checks, the poller's last cycle, inbox, outbox."""

    health: Health
    doctor: DoctorReport
    poller_enabled: bool
    last_cycle: CycleRecord | None
    inbox: list[InboxItem]
    outbox: list[OutboxItem]
    config_path: str | None = None
    """The config file this daemon runs on (None: the built-in defaults)."""
    workspaces_enabled: bool = False
    worktrees: WorktreesDisk | None = None
    """The disk used by worktrees (None: not measured yet)."""


def status_page(ctx: Ctx, inbox_status: InboxStatus | None = None, limit: int = 50) -> StatusPage:
    """What the Status page shows (the inbox narrowed to INBOX_STATUS when given)."""
    github = ctx.config.github
    return StatusPage(
        health=health(ctx),
        doctor=doctor.run_doctor(ctx.config, True),
        poller_enabled=github.enabled and github.poller.enabled,
        last_cycle=last_cycle(ctx.db),
        inbox=inbox_items(ctx, inbox_status, limit),
        outbox=outbox.list_items(ctx, None, limit),
        config_path=str(ctx.loaded.path.absolute()) if ctx.loaded.path else None,
        workspaces_enabled=ctx.config.workspaces.enabled,
        worktrees=workspace.disk_usage(ctx.config),
    )
