"""What the surfaces show of sessions: one function per view, shared by the CLI, REST, MCP and
the SDK, so that every surface renders the same object.

- ``session_view``: a work-item session with its pane state and delivered-prompt count;
- ``session_screen``: the last lines of a session's screen (or headless transcript);
- ``standing_view``: one standing session as ``standing list`` shows it;
- ``attach_plan``: how to attach a terminal to a session's pane (read-only when it is closed).
"""

from __future__ import annotations

from dataclasses import dataclass

from the_loop.agent import panes
from the_loop.cluster import peers as cluster
from the_loop.cluster import placement
from the_loop.context import Ctx
from the_loop.errors import BadInput, NotFound
from the_loop.refs import validate_standing_name
from the_loop.runner import AttachCommand
from the_loop.standing import service as standing
from the_loop.standing.service import StandingView
from the_loop.store.sessions import SessionStatus, delivered_count
from the_loop.wire import Wire
from the_loop.work_items import service as sessions
from the_loop.work_items.records import SessionSummary, summaries


class SessionView(SessionSummary):
    """A session record with its ``attention``, ``pane`` (live, dead, absent, unknown,
    headless, or elsewhere: its agent runs on another node, ``node``, whose tmux this node does
    not probe) and ``deliveries`` (prompts delivered into it so far)."""

    pane: str
    deliveries: int
    permission_mode: str = "ask"
    """The harness's ``permissionMode``: ask (it asks before tools), auto or bypass."""
    queued_because: str | None = None
    """Why a queued session has not started, as of now, and what starts it."""


class Screen(Wire):
    """The last ``lines`` lines of session ``session_id``'s screen."""

    session_id: str
    lines: int
    text: str


def session_view(ctx: Ctx, ref_or_id: str) -> SessionView:
    """The session named by REF_OR_ID (a session id, or a work item ref: its live session,
    else its latest), probed; ``NotFound`` when there is none, ``BadInput`` for a bad ref."""
    rec = sessions.resolve(ctx, ref_or_id)
    (summary,) = summaries(ctx, [rec])
    return SessionView(
        **summary.model_dump(by_alias=False),
        pane="elsewhere" if placement.runs_on(ctx, rec) else sessions.probe(ctx, rec),
        deliveries=delivered_count(ctx.db.connect(), rec.id),
        permission_mode=permission_mode(ctx, rec.harness),
        queued_because=(
            sessions.why_queued(ctx, rec) if rec.status is SessionStatus.queued else None
        ),
    )


def permission_mode(ctx: Ctx, harness: str) -> str:
    """HARNESS's configured ``permissionMode`` (ask when it is not configured)."""
    configured = ctx.config.harnesses.get(harness)
    return configured.permission_mode if configured else "ask"


def session_screen(ctx: Ctx, ref_or_id: str, lines: int = 200, relay: bool = True) -> Screen:
    """The last LINES lines of the session's screen (its transcript when headless). A session
    on another node: read from that node when both have the cluster token and RELAY (not for
    a node-to-node request itself), else ``RunsElsewhere`` naming the command to run there."""
    rec = sessions.resolve(ctx, ref_or_id)
    try:
        placement.require_here(ctx, rec, placement.command("logs", rec.work_item, "-n", str(lines)))
    except placement.RunsElsewhere as exc:
        text = cluster.peer_screen(ctx, exc.node, rec.id, lines) if relay else None
        if text is None:
            raise
        return Screen(session_id=rec.id, lines=lines, text=text)
    return Screen(session_id=rec.id, lines=lines, text=sessions.screen(ctx, rec.id, lines))


def standing_view(ctx: Ctx, name: str) -> StandingView:
    """Standing session NAME as listed; ``BadInput`` for a bad name, ``NotFound`` when no such
    session is declared or created."""
    validate_standing_name(name)
    for view in standing.list_standing(ctx):
        if view.name == name:
            return view
    raise NotFound(f"no standing session {name!r}")


@dataclass(frozen=True, slots=True)
class AttachPlan:
    """The tmux client to run, whether it attaches read-only, and why when it was forced; or,
    when the agent has exited, its last screen to show instead (``screen``, with the ``note``
    saying so: no client attaches to a dead pane, ``panes.record``)."""

    command: AttachCommand | None
    read_only: bool
    note: str | None = None
    screen: str | None = None


def attach_plan(ctx: Ctx, ref_or_id: str, read_only: bool = False) -> AttachPlan:
    """How to attach to the session's pane: read-only when asked or when the session is
    closed (``note`` says so); ``BadInput`` for a headless session."""
    rec = sessions.resolve(ctx, ref_or_id)
    if rec.runner != "tmux" or not rec.tmux_target:
        raise BadInput(f"session {rec.id} runs headless; use `the-loop sessions logs {ref_or_id}`")
    placement.require_here(ctx, rec, placement.command("attach", rec.work_item))
    last = panes.record(ctx, rec.tmux_target)
    if last is not None:
        said = f"the agent of {rec.work_item} has exited; its last screen, kept as a record:"
        return AttachPlan(None, True, said, last)
    note = None
    if not rec.live and not read_only:
        note = f"session {rec.id} of {rec.work_item} is closed; attaching read-only"
        read_only = True
    command = panes.attach_command(ctx, rec.tmux_target, read_only=read_only).unwrap()
    return AttachPlan(command, read_only, note)
