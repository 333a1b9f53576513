"""The event log: the typed catalogue, and emit / query / follow / prune.

Every decision emits one event. Events are rows in the state database, so any process (the
daemon, the CLI, a test) can emit them and any other can read or follow them.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel

from the_loop.errors import BadInput
from the_loop.refs import WorkItemRef, validate_standing_name
from the_loop.store import Database
from the_loop.store import events as store
from the_loop.store.events import Event, EventFilter, Level, NewEvent
from the_loop.wire import Wire

__all__ = [
    "CATALOGUE",
    "Event",
    "EventFilter",
    "EventSpec",
    "EventType",
    "Level",
    "build",
    "catalogue",
    "emit",
    "follow",
    "last_id",
    "parse_filter",
    "parse_since",
    "prune",
    "query",
    "read_after",
]


class Payload(BaseModel):
    """Base of event payloads: declared fields are required, extra detail is allowed."""

    model_config = ConfigDict(
        extra="allow", alias_generator=to_camel, populate_by_name=True, defer_build=True
    )


class Reason(Payload):
    reason: str


class Unpriced(Payload):
    model: str
    budgets: str


class Retry(Payload):
    error: str
    will_retry: bool
    attempt: int = 1


class Resumed(Payload):
    resumed: bool


class ServerLost(Payload):
    socket: str
    agents: int


class Unsent(Payload):
    enters: int
    left: bool


class AutoClosed(Payload):
    reason: Literal["issue-closed", "pr-merged", "pr-closed", "stopped"]


class ErrorText(Payload):
    error: str


class Message(Payload):
    message: str


class AttentionChanged(Payload):
    to: str
    signal: str
    rule: str


class AwaitingInput(Payload):
    state: str
    prompt_id: str | None = None


class HookRefused(Payload):
    agent: str
    reason: str


class HookLeft(Payload):
    agent: str
    prompt_id: str
    dialog: Literal["gone", "shown"]


class EgressRefused(Payload):
    agent: str
    host: str
    reason: str


class CredentialRefused(Payload):
    agent: str
    broker: str
    request: str
    reason: str


class TaskFault(Payload):
    task: str
    error: str
    retry_in: float


class EventType(Wire):
    """One entry of the event catalogue as the surfaces show it; ``payload`` names the fields
    every event of the type carries."""

    type: str
    level: str
    description: str
    payload: list[str]


def catalogue() -> list[EventType]:
    """The event catalogue, by type (``events --types``, ``GET /api/v1/events/types``)."""
    return [
        EventType(
            type=s.name,
            level=s.level.name,
            description=s.description,
            payload=sorted(f.alias or n for n, f in s.payload.model_fields.items()),
        )
        for s in sorted(CATALOGUE.values(), key=lambda s: s.name)
    ]


@dataclass(frozen=True, slots=True)
class EventSpec:
    """One entry of the catalogue: its name, default level, meaning and payload model."""

    name: str
    level: Level
    description: str
    payload: type[Payload] = Payload


def _spec(name: str, level: Level, description: str, payload: type[Payload] = Payload) -> EventSpec:
    return EventSpec(name, level, description, payload)


_I, _W, _E, _D = Level.info, Level.warning, Level.error, Level.debug

CATALOGUE: dict[str, EventSpec] = {
    s.name: s
    for s in [
        _spec("webhook.received", _D, "A signed webhook delivery was accepted into the inbox."),
        _spec("webhook.rejected", _W, "A webhook was refused (bad signature, size, JSON).", Reason),
        _spec("webhook.duplicate", _I, "A delivery id already processed successfully came again."),
        _spec("route.ignored", _I, "An event was ignored by the routing rules.", Reason),
        _spec("route.unauthorized", _W, "An actor not in authorizedUsers tried to drive an agent."),
        _spec("route.replied", _I, "The-loop answered a comment instead of acting."),
        _spec(
            "dispatch.queued", _I, "A spawn or resume waits (FIFO) for a slot or memory.", Reason
        ),
        _spec("dispatch.succeeded", _D, "An inbox item was processed."),
        _spec("dispatch.failed", _W, "Processing an inbox item failed.", Retry),
        _spec("dispatch.dead_lettered", _E, "An inbox item failed for good.", ErrorText),
        _spec("session.spawned", _I, "An agent session was started for a work item."),
        _spec("session.spawn_failed", _E, "An agent session could not be started.", ErrorText),
        _spec("session.delivered", _I, "A prompt was delivered into a live session."),
        _spec("session.respawned", _I, "A dead session was started again.", Resumed),
        _spec(
            "session.unsent",
            _I,
            "A pasted message stayed in the agent's input box: Enter was pressed again"
            " (``enters``), and it left the box (``left``), or it was not seen to (warning).",
            Unsent,
        ),
        _spec("session.restarted", _I, "An operator restarted a live session's agent."),
        _spec("session.resume_failed", _W, "Resuming a conversation failed; starting fresh."),
        _spec("session.respawn_averted", _I, "A respawn was not needed: the target was live."),
        _spec("session.paused", _I, "Delivery to a session was paused."),
        _spec("session.resumed", _I, "Delivery to a paused session was resumed."),
        _spec("session.closed", _I, "A session was closed.", Reason),
        _spec("session.autoclosed", _I, "A session closed by its work item.", AutoClosed),
        _spec("session.kept_open", _I, "A linked item closed; this session stays open.", Reason),
        _spec("session.harness_terminated", _I, "The agent process of a session was stopped."),
        _spec(
            "session.attention_changed",
            _I,
            "An agent's attention state changed (working, waiting, needs-input, ...).",
            AttentionChanged,
        ),
        _spec(
            "session.awaiting_input",
            _I,
            "An agent started to wait for a person: a question or a permission.",
            AwaitingInput,
        ),
        _spec(
            "hook.refused",
            _W,
            "A hook report was refused: not its session's token, another session's, an answer,"
            " or a transcript outside the agent's own directory.",
            HookRefused,
        ),
        _spec(
            "hook.left",
            _I,
            "A permission hook left without a decision (the dialog was answered or dismissed"
            " in the agent's terminal): the dialog is gone (its prompt closed, held messages go"
            " on) or still shows (answer it there).",
            HookLeft,
        ),
        _spec(
            "sandbox.egress_refused",
            _W,
            "A confined agent tried to reach a host outside sandbox.allowHosts (SPEC §18).",
            EgressRefused,
        ),
        _spec(
            "sandbox.credential_refused",
            _W,
            "The GitHub broker refused a confined agent's git or API call (SPEC §18).",
            CredentialRefused,
        ),
        _spec("session.vanished", _W, "A live session's agent is gone; the next event respawns."),
        _spec(
            "runner.server_lost",
            _W,
            "The tmux server the agents ran in ended under them (it crashed, or was killed):"
            " each agent in it is gone, and comes back at its next message.",
            ServerLost,
        ),
        _spec(
            "session.foreign_occupant",
            _W,
            "A program the-loop did not start holds an agent's tmux target: left untouched.",
        ),
        _spec("session.exited", _I, "A headless delivery finished with an exit status."),
        _spec("session.suspended", _I, "An idle session's harness was stopped; pane kept.", Reason),
        _spec("session.woken", _I, "A suspended session is resumed for a delivery."),
        _spec("session.over_budget", _W, "A budget was reached: the agent stopped.", Reason),
        _spec(
            "session.unpriced",
            _W,
            "A model the agent used has no price: the dollar budgets do not count its tokens.",
            Unpriced,
        ),
        _spec(
            "session.held",
            _I,
            "A delivery is kept, not delivered: over budget, behind a dialog the agent shows"
            " (delivered once it is answered), or behind a person's unsent text in its input"
            " box (delivered once it is sent or cleared).",
            Reason,
        ),
        _spec(
            "session.resent",
            _W,
            "A turn failed for good before the agent's model saw its messages (no login, no"
            " credit): they are queued again and delivered once the agent can work.",
        ),
        _spec("session.extended", _I, "A session's budget was extended."),
        _spec("writeback.posted", _I, "A queued reaction or comment was posted to GitHub."),
        _spec(
            "writeback.failed", _W, "GitHub refused a write-back for good (not retried).", ErrorText
        ),
        _spec("workspace.prepared", _I, "A git worktree was prepared for a work item."),
        _spec("workspace.removed", _I, "A work item's git worktree was removed."),
        _spec("prune.done", _I, "`the-loop prune` removed closed sessions' panes and worktrees."),
        _spec("poll.cycle", _D, "One poll cycle finished."),
        _spec("poll.closure_detected", _I, "The poller saw a work item closed or merged."),
        _spec("poll.error", _W, "A poll cycle failed; nothing was closed.", ErrorText),
        _spec("poll.rate_limited", _W, "GitHub rate-limited the poller; waiting for reset."),
        _spec("standing.created", _I, "A standing session definition was created."),
        _spec("standing.create_failed", _W, "Creating a standing session failed.", ErrorText),
        _spec("standing.deleted", _I, "A created standing session was deleted."),
        _spec("standing.started", _I, "A standing session was started fresh."),
        _spec("standing.resumed", _I, "A standing session resumed its conversation."),
        _spec("standing.resume_failed", _W, "Resuming a standing session failed; fresh start."),
        _spec("standing.spawn_failed", _E, "A standing session could not be started.", ErrorText),
        _spec("standing.stopped", _I, "A standing session was stopped."),
        _spec("standing.stop_failed", _E, "Stopping a standing session failed.", ErrorText),
        _spec("standing.exited", _W, "A standing agent is gone unstopped; start resumes it."),
        _spec("standing.said", _I, "A message was delivered to a standing session."),
        _spec(
            "standing.over_budget", _W, "A budget was reached: the standing agent stopped.", Reason
        ),
        _spec("standing.suspended", _I, "An idle standing session's harness was stopped.", Reason),
        _spec("standing.woken", _I, "A held standing session is lifted to be resumed."),
        _spec("standing.extended", _I, "A standing session's budget was extended."),
        _spec("standing.moved", _I, "A standing session of a dead node was taken over here."),
        _spec("slack.received", _D, "A Slack event was received."),
        _spec("slack.posted", _I, "The-loop posted to Slack."),
        _spec("slack.dropped", _I, "A Slack message was dropped.", Reason),
        _spec("config.reloaded", _I, "The config file changed and was reloaded."),
        _spec("config.reload_failed", _E, "The changed config is invalid; the old one stays."),
        _spec("config.warning", _W, "A setting is accepted but risky.", Message),
        _spec("daemon.started", _I, "The daemon started serving."),
        _spec("daemon.stopped", _I, "The daemon stopped."),
        _spec("node.dead", _E, "A node's heartbeat went silent: its sessions are orphaned."),
        _spec("node.rejoined", _W, "A node declared dead beats again and rejoins."),
        _spec("session.moved", _I, "A session of a dead node was taken over by this node."),
        _spec("session.taken_back", _I, "A node took back its own orphaned session."),
        _spec("session.transcript_restored", _I, "A kept transcript was written for a resume."),
        _spec("session.transcript_over_cap", _W, "A transcript is too large to keep in the store."),
        _spec("dispatch.forwarded", _D, "A delivery was handed to the node owning its item."),
        _spec("task.stalled", _E, "A background task cannot make progress; it retries.", TaskFault),
        _spec("task.recovered", _I, "A stalled or crashed background task makes progress again."),
        _spec("task.crashed", _E, "A background task failed on a bug; it is restarted.", TaskFault),
    ]
}


def emit(
    db: Database,
    type: str,
    *,
    source: str,
    level: Level | None = None,
    work_item: str | None = None,
    standing: str | None = None,
    session_id: str | None = None,
    delivery_id: str | None = None,
    **payload: Any,
) -> int:
    """Append one event of a catalogued TYPE; returns its id. Payload is validated."""
    return store.append(
        db,
        build(
            type,
            source=source,
            level=level,
            work_item=work_item,
            standing=standing,
            session_id=session_id,
            delivery_id=delivery_id,
            **payload,
        ),
    )


def build(
    type: str,
    *,
    source: str,
    level: Level | None = None,
    work_item: str | None = None,
    standing: str | None = None,
    session_id: str | None = None,
    delivery_id: str | None = None,
    **payload: Any,
) -> NewEvent:
    """The row ``emit`` would append, validated but not written (for a caller that writes it
    inside a transaction of its own, e.g. with the inbox acceptance it records)."""
    spec = CATALOGUE.get(type)
    if spec is None:
        raise ValueError(f"event type {type!r} is not in the catalogue")
    try:
        body = spec.payload.model_validate(payload).model_dump(mode="json", by_alias=True)
    except ValidationError as exc:
        raise ValueError(f"bad payload for {type}: {exc}") from None
    return NewEvent(
        ts=time.time(),
        type=type,
        level=int(level or spec.level),
        source=source,
        work_item=work_item,
        standing=standing,
        session_id=session_id,
        delivery_id=delivery_id,
        payload_json=json.dumps(body, separators=(",", ":")),
    )


def parse_filter(
    types: Sequence[str] = (),
    work_item: str | None = None,
    standing: str | None = None,
    level: str = "debug",
    since: str | None = None,
    limit: int | None = 50,
    after_id: int = 0,
) -> EventFilter:
    """A filter from what a person types (every surface uses this one); ``BadInput`` for a bad
    ref, standing name, level or since (``30s``/``15m``/``2h``/``1d`` or an ISO time)."""
    return EventFilter(
        types=tuple(types),
        work_item=str(WorkItemRef.parse(work_item)) if work_item else None,
        standing=validate_standing_name(standing) if standing else None,
        min_level=Level.parse(level),
        since=parse_since(since) if since else None,
        after_id=after_id,
        limit=limit,
    )


_DURATION = re.compile(r"\A([0-9]+)([smhd])\Z")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """``30s``/``15m``/``2h``/``1d`` ago, or an ISO time; returns a Unix timestamp."""
    m = _DURATION.match(text.strip())
    if m:
        return (now if now is not None else time.time()) - int(m.group(1)) * _UNITS[m.group(2)]
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise BadInput(f"invalid --since {text!r}: use 30s, 15m, 2h, 1d or an ISO time") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def query(db: Database, f: EventFilter) -> list[Event]:
    """The newest ``limit`` events matching F, oldest first."""
    return store.newest(db, f)


def read_after(db: Database, f: EventFilter, batch: int = 500) -> list[Event]:
    """Events after ``f.after_id`` matching F, oldest first (at most BATCH)."""
    return store.after(db, f, batch)


def last_id(db: Database) -> int:
    """The id of the newest event (0 when there is none)."""
    return store.last_id(db)


def follow(
    db: Database, f: EventFilter, interval: float = 0.2, stop: Any = None
) -> Iterator[Event]:
    """Yield events written by any process after ``f.after_id``, polling every INTERVAL.

    STOP, when given, is a ``threading.Event`` that ends the iteration.
    """
    after = f.after_id
    while stop is None or not stop.is_set():
        batch = read_after(db, f.following(after))
        for event in batch:
            after = event.id
            yield event
        if not batch:
            if stop is not None:
                stop.wait(interval)
            else:
                time.sleep(interval)


def prune(db: Database, retention_days: float, now: float | None = None) -> int:
    """Delete events older than RETENTION_DAYS; returns how many were removed."""
    cutoff = (now if now is not None else time.time()) - timedelta(
        days=retention_days
    ).total_seconds()
    return store.delete_before(db, cutoff)
