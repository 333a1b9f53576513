"""The routing policy as pure functions: (work event, current state, config) → a decision.

No I/O, no clock, no randomness: the caller loads the state the rules need (the live sessions
of the event's work items, and what became of earlier processing of this delivery) and carries
the returned actions out. The rules of SPEC §6 "Decisions" apply in order; the first rule that
decides ends the evaluation:

1. An event type outside ``github.webhook.events`` is ignored; a delivery already processed
   successfully is a duplicate; one whose earlier processing failed is decided afresh; a
   comment, review or review comment another delivery already processed (a replayed delivery,
   or the poller and a webhook seeing one comment) is ignored (``already-processed``). A type
   that cannot name a work item, an action nothing routes, a repository outside a non-empty
   ``github.repos`` and a CI run that concerns no item are ignored too.
2. A comment, review or opened item carrying the self-marker, or any non-close, non-CI event by
   ``routing.botLogin``, is ignored.
3. A close, from any actor: the live session of the closed item is closed (``issue-closed``,
   ``pr-merged``, ``pr-closed``); live sessions reached only through a link are kept open. A
   close never spawns or delivers.
4. With ``routing.enabled`` false nothing else happens. Any other actor not in the list of
   its source (``SOURCES``: GitHub logins in ``routing.authorizedUsers``, case-insensitive;
   Slack user ids in ``slack.authorizedUsers``; empty means nobody) is unauthorized. CI
   events are exempt: their sender authors nothing (GitHub may even name ``ghost``); they
   never spawn, arm or close, and reach only a session an authorized person started.
5. Keywords (whole words, case-insensitive, outside quotes and code) in the text an event
   authored: ``start``/``do`` arm, ``stop`` closes the live session (``stopped``), ``pause``
   and ``resume`` toggle delivery; two different keywords do nothing but reply why. With
   ``requireStartCommand`` false, ``routing.label`` on an item opened or labelled also arms.
6. The first of the event's items (linked issues first, then the item itself) that has a live
   session receives the delivery, dropped while it is paused; a CI event only for a conclusion
   in ``routing.ciConclusions``. With no live session an armed event spawns a session for the
   item it was written on (docs/decisions/0005-pr-linked-issues.md); CI never spawns.

A source differs only where ``SOURCES`` says (docs/decisions/0070-slack-through-the-engine.md):
a Slack thread reply is not filtered by ``github.webhook.events``, never arms (start on the
item), and a refusal for a paused or missing session is explained in the thread (a ``Reply``).

Long because the rules, their vocabulary and the actions they return are read in order in one
place; the keyword scanner and the source table are modules of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import ClassVar, TypeAlias

from the_loop.config import Config, KeywordsConfig
from the_loop.engine.keywords import (
    answer_after,
    mask_quotes_and_code,
    permission_prompt_id,
    phrase_re,
)
from the_loop.engine.sources import SOURCES as SOURCES
from the_loop.engine.sources import Source as Source
from the_loop.engine.sources import is_authorized as is_authorized
from the_loop.engine.sources import source_of
from the_loop.refs import WorkItemRef
from the_loop.work import WorkEvent, WorkKind

# --- vocabulary -----------------------------------------------------------------------------


class Keyword(StrEnum):
    """The commands (their phrases come from ``routing.keywords``)."""

    START = "start"
    DO = "do"
    STOP = "stop"
    PAUSE = "pause"
    RESUME = "resume"
    ALLOW = "allow"
    DENY = "deny"
    ANSWER = "answer"


class LiveStatus(StrEnum):
    """Status of a live session (a closed one is not live)."""

    ACTIVE = "active"
    PAUSED = "paused"


class PriorDelivery(StrEnum):
    """What became of earlier processing of the same delivery id."""

    NONE = "none"
    FAILED = "failed"
    SUCCEEDED = "succeeded"


class CloseReason(StrEnum):
    """Why a session was closed by routing (``session.autoclosed``)."""

    ISSUE_CLOSED = "issue-closed"
    PR_MERGED = "pr-merged"
    PR_CLOSED = "pr-closed"
    STOPPED = "stopped"


class IgnoreReason(StrEnum):
    """The ``reason`` of a ``route.ignored`` event."""

    EVENT_NOT_CONFIGURED = "event-not-configured"
    UNSUPPORTED_EVENT = "unsupported-event"
    ACTION_NOT_ROUTED = "action-not-routed"
    REPOSITORY_NOT_CONFIGURED = "repository-not-configured"
    NO_WORK_ITEM = "no-work-item"
    SELF_MARKER = "self-marker"
    BOT_AUTHOR = "bot-author"
    ROUTING_DISABLED = "routing-disabled"
    NO_LIVE_SESSION = "no-live-session"
    NOT_ARMED = "not-armed"
    ITEM_CLOSED = "item-closed"
    SESSION_PAUSED = "session-paused"
    ALREADY_PAUSED = "already-paused"
    NOT_PAUSED = "not-paused"
    CI_CONCLUSION_NOT_ROUTED = "ci-conclusion-not-routed"
    NOT_STARTED_BY_AUTHORIZED = "not-started-by-authorized"
    CONFLICTING_KEYWORDS = "conflicting-keywords"
    ALREADY_PROCESSED = "already-processed"


# --- state in -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class LiveSession:
    """A work item's live session as the store knows it."""

    session_id: str
    status: LiveStatus = LiveStatus.ACTIVE
    requester: str = ""  # who started it (the actor of the event that spawned it)


@dataclass(frozen=True, slots=True)
class RouteState:
    """What the rules need to know besides the event: the live sessions of (at least) the
    event's items, what became of earlier processing of this delivery id, and ``seen_by``: the
    other delivery id under which the object the event authored (``WorkEvent.source_id``) was
    already processed, None when no other delivery processed it."""

    live: Mapping[WorkItemRef, LiveSession] = field(default_factory=dict)
    prior: PriorDelivery = PriorDelivery.NONE
    seen_by: str | None = None


# --- actions out ----------------------------------------------------------------------------
# ``event_type`` is the catalogue event the caller records: with the delivery's outcome for
# the decision-only actions (Ignore, Duplicate, Unauthorized, KeepOpen), once carried out for
# the others.


@dataclass(frozen=True, slots=True)
class Ignore:
    """Nothing happens, for REASON."""

    reason: IgnoreReason
    event_type: ClassVar[str | None] = "route.ignored"


@dataclass(frozen=True, slots=True)
class Duplicate:
    """This delivery id was already processed successfully."""

    delivery_id: str
    event_type: ClassVar[str | None] = "webhook.duplicate"


@dataclass(frozen=True, slots=True)
class Unauthorized:
    """ACTOR may not drive agents; nothing is delivered."""

    actor: str
    event_type: ClassVar[str | None] = "route.unauthorized"


@dataclass(frozen=True, slots=True)
class Reply:
    """Tell TO (the event's actor; empty for nobody in particular) TEXT about ITEM, where the
    event was written: a comment on ITEM for GitHub (the poster appends the self-marker,
    ``the_loop.work.mark``), a reply in ITEM's bound thread for Slack. TEXT is neutral; the
    outbox renders the mention and escapes for the place it is posted."""

    item: WorkItemRef
    text: str
    to: str = ""
    event_type: ClassVar[str | None] = None


@dataclass(frozen=True, slots=True)
class Spawn:
    """Start a session for ITEM. KEYWORD is the arming command, None when the label armed it;
    INSTRUCTION is the text after ``do`` (empty otherwise)."""

    item: WorkItemRef
    keyword: Keyword | None
    instruction: str
    event_type: ClassVar[str | None] = "session.spawned"


@dataclass(frozen=True, slots=True)
class Deliver:
    """Render the event's prompt and deliver it into SESSION_ID, the live session of ITEM."""

    item: WorkItemRef
    session_id: str
    event_type: ClassVar[str | None] = "session.delivered"


@dataclass(frozen=True, slots=True)
class Close:
    """Close SESSION_ID, the live session of ITEM, for REASON."""

    item: WorkItemRef
    session_id: str
    reason: CloseReason
    event_type: ClassVar[str | None] = "session.autoclosed"


@dataclass(frozen=True, slots=True)
class KeepOpen:
    """SESSION_ID of ITEM stays open although CLOSED_ITEM, which links to it, was closed."""

    item: WorkItemRef
    session_id: str
    closed_item: WorkItemRef
    event_type: ClassVar[str | None] = "session.kept_open"


@dataclass(frozen=True, slots=True)
class Pause:
    """Suppress delivery into SESSION_ID of ITEM (events are dropped, not queued)."""

    item: WorkItemRef
    session_id: str
    event_type: ClassVar[str | None] = "session.paused"


@dataclass(frozen=True, slots=True)
class Resume:
    """Lift the pause of SESSION_ID of ITEM (nothing dropped meanwhile is replayed)."""

    item: WorkItemRef
    session_id: str
    event_type: ClassVar[str | None] = "session.resumed"


@dataclass(frozen=True, slots=True)
class AnswerCommand:
    """What an ``allow``, ``deny`` or ``answer`` command says: allow or deny a permission, or
    ANSWER a question when given (a choice's number or a typed answer); PROMPT_ID, when the
    text named one, must be the very prompt that waits."""

    allow: bool
    prompt_id: str | None
    answer: str | None = None

    @property
    def verb(self) -> str:
        return "answer" if self.answer is not None else ("allow" if self.allow else "deny")


@dataclass(frozen=True, slots=True)
class AnswerPermission:
    """Answer the prompt SESSION_ID of ITEM waits on as COMMAND says, on behalf of ACTOR; the
    agent layer refuses a stale answer."""

    item: WorkItemRef
    session_id: str
    actor: str
    command: AnswerCommand
    event_type: ClassVar[str | None] = None


Action: TypeAlias = (
    (Ignore | Duplicate | Unauthorized | Reply | Spawn | Deliver | Close | KeepOpen | Pause)
    | Resume
    | AnswerPermission
)


@dataclass(frozen=True, slots=True)
class Decision:
    """The actions to carry out, in order, and one human-readable line per rule that decided."""

    actions: tuple[Action, ...]
    reasons: tuple[str, ...]

    @property
    def acts(self) -> bool:
        """True when some action changes a session (spawn, deliver, close, pause, resume)."""
        return any(
            isinstance(a, Spawn | Deliver | Close | Pause | Resume | AnswerPermission)
            for a in self.actions
        )

    @property
    def queues_prompt(self) -> bool:
        """True when a spawn or a delivery queues the event's prompt (the caller records the
        event's authored object as processed in that same transaction)."""
        return any(isinstance(a, Spawn | Deliver) for a in self.actions)


# --- keywords -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommandScan:
    """The distinct keywords found in a text, in order of first appearance, and the
    instruction (the text after the first ``do``; empty when there is none)."""

    keywords: tuple[Keyword, ...]
    instruction: str = ""


def scan_commands(text: str | None, keywords: KeywordsConfig) -> CommandScan:
    """Find the keyword phrases in TEXT: whole words (a letter, digit, ``_`` or ``-`` on either
    side breaks a match), any case, words separated by spaces or tabs. Quoted lines (``>``),
    fenced code and inline code are not read, so quoting a command does not repeat it. Of two
    overlapping phrases the longer counts."""
    if not text:
        return CommandScan(())
    masked = mask_quotes_and_code(text)
    hits: list[tuple[int, int, Keyword]] = []
    for keyword in Keyword:
        match = phrase_re(getattr(keywords, keyword.value)).search(masked)
        if match:
            hits.append((match.start(), match.end(), keyword))
    hits.sort(key=lambda hit: (hit[0], -hit[1]))
    kept: list[tuple[int, int, Keyword]] = []
    for hit in hits:
        if not any(start <= hit[0] and hit[1] <= end for start, end, _ in kept):
            kept.append(hit)
    do_end = next((end for _, end, keyword in kept if keyword is Keyword.DO), None)
    instruction = text[do_end:].strip() if do_end is not None else ""
    return CommandScan(tuple(keyword for _, _, keyword in kept), instruction)


# --- predicates the rules share (and the poller asks: one definition each) -----------------


def repo_allowed(ref: WorkItemRef, repos: Sequence[str]) -> bool:
    """True when REF's repository may be routed under ``github.repos`` = REPOS: an empty list
    accepts every repository; otherwise OWNER/REPO must be listed (case-insensitive; the host
    is not part of the match)."""
    return repository_allowed(ref.full_name, repos)


def repository_allowed(full_name: str, repos: Sequence[str]) -> bool:
    """``repo_allowed`` for a plain ``OWNER/REPO`` name."""
    wanted = full_name.lower()
    return not repos or any(entry.lower() == wanted for entry in repos)


def arming_keyword(scan: CommandScan) -> Keyword | None:
    """Rule 5: the keyword that arms an item (``start`` or ``do``) when SCAN found exactly
    one keyword and it is one of those; None otherwise (no keyword, a control keyword, or a
    conflict of two)."""
    if len(scan.keywords) == 1 and scan.keywords[0] in (Keyword.START, Keyword.DO):
        return scan.keywords[0]
    return None


def is_start_request(body: str | None, actor: str, config: Config) -> bool:
    """True when BODY, authored by ACTOR, is an authorized start: ACTOR is authorized and the
    text arms its item by keyword (rules 4 and 5), as ``decide`` would judge a comment."""
    if not is_authorized(actor, config):
        return False
    return arming_keyword(scan_commands(body, config.routing.keywords)) is not None


# --- the decision ---------------------------------------------------------------------------

_Rule: TypeAlias = Callable[[WorkEvent, RouteState, Config], Decision | None]
_AUTHORED = frozenset({WorkKind.COMMENT, WorkKind.REVIEW, WorkKind.REVIEW_COMMENT, WorkKind.OPENED})


def decide(event: WorkEvent, state: RouteState, config: Config) -> Decision:
    """Apply the routing rules to EVENT given STATE and CONFIG; pure and total.

    Always returns at least one action. A delivery whose earlier processing failed is decided
    as if new, with a first reason saying so.
    """
    decision = next(d for rule in _RULES if (d := rule(event, state, config)) is not None)
    if state.prior is PriorDelivery.FAILED:
        note = f"delivery {event.delivery_id} failed before: processing it again"
        return Decision(decision.actions, (note, *decision.reasons))
    return decision


def _intake(event: WorkEvent, state: RouteState, config: Config) -> Decision | None:
    """Rule 1: the configured event types, dedupe, and what cannot be routed at all."""
    if source_of(event.source).typed and event.event_name not in config.github.webhook.events:
        return _ignore(
            IgnoreReason.EVENT_NOT_CONFIGURED,
            f"event type {event.event_name!r} is not in github.webhook.events",
        )
    if state.prior is PriorDelivery.SUCCEEDED:
        return Decision(
            (Duplicate(event.delivery_id),),
            (f"delivery {event.delivery_id} was already processed",),
        )
    if state.seen_by is not None and state.seen_by != event.delivery_id:
        return _ignore(
            IgnoreReason.ALREADY_PROCESSED,
            f"{event.source_id or 'its object'} was already processed (delivery {state.seen_by})",
        )
    if event.kind is WorkKind.UNSUPPORTED:
        return _ignore(
            IgnoreReason.UNSUPPORTED_EVENT,
            f"event type {event.event_name!r} cannot name a work item",
        )
    if event.repository and not repository_allowed(event.repository, config.github.repos):
        return _ignore(
            IgnoreReason.REPOSITORY_NOT_CONFIGURED,
            f"repository {event.repository} is not in github.repos",
        )
    if event.kind is WorkKind.OTHER:
        return _ignore(
            IgnoreReason.ACTION_NOT_ROUTED,
            f"{event.event_name} action {event.action!r} is not routed",
        )
    if not event.items:
        return _ignore(IgnoreReason.NO_WORK_ITEM, "the event concerns no work item")
    return None


def _self_authored(event: WorkEvent, state: RouteState, config: Config) -> Decision | None:
    """Rule 2: the-loop's (or its agents') own words never come back as work."""
    if event.kind in (WorkKind.CLOSED, WorkKind.CI):
        return None
    if event.kind in _AUTHORED and event.has_self_marker:
        return _ignore(IgnoreReason.SELF_MARKER, "the text carries the self-marker")
    bot = config.routing.bot_login
    if bot and event.actor.lower() == bot.lower():
        return _ignore(IgnoreReason.BOT_AUTHOR, f"{event.actor} is routing.botLogin")
    return None


def _close(event: WorkEvent, state: RouteState, config: Config) -> Decision | None:
    """Rule 3: a close ends the closed item's session and keeps linked sessions open."""
    if event.kind is not WorkKind.CLOSED:
        return None
    actions: list[Action] = []
    for item, live in _live_items(event, state, config):
        if item == event.own:
            actions.append(Close(item, live.session_id, _close_reason(event)))
        elif event.own is not None:
            actions.append(KeepOpen(item, live.session_id, event.own))
    if not actions:
        return _ignore(IgnoreReason.NO_LIVE_SESSION, f"{event.own} closed; no live session")
    return Decision(tuple(actions), (f"{event.own} was closed by {event.actor or 'someone'}",))


def _close_reason(event: WorkEvent) -> CloseReason:
    if not event.own_is_pull_request:
        return CloseReason.ISSUE_CLOSED
    return CloseReason.PR_MERGED if event.merged else CloseReason.PR_CLOSED


def _authorized(event: WorkEvent, state: RouteState, config: Config) -> Decision | None:
    """Rule 4: routing switched off, and who may drive agents (fail closed)."""
    if not config.routing.enabled:
        return _ignore(IgnoreReason.ROUTING_DISABLED, "routing.enabled is false")
    if event.kind is WorkKind.CI:
        return None
    if not is_authorized(event.actor, config, event.source):
        allowed = source_of(event.source).allowed
        return Decision(
            (Unauthorized(event.actor),),
            (f"{event.actor or 'an unknown actor'} is not in {allowed}",),
        )
    return None


def _ci(event: WorkEvent, state: RouteState, config: Config) -> Decision | None:
    """Rule 6 for CI: deliver a routed conclusion to a live session; never spawn."""
    if event.kind is not WorkKind.CI:
        return None
    if event.conclusion not in config.routing.ci_conclusions:
        return _ignore(
            IgnoreReason.CI_CONCLUSION_NOT_ROUTED,
            f"CI conclusion {event.conclusion!r} is not in routing.ciConclusions",
        )
    return _deliver_or(event, state, config, None)


def _route(event: WorkEvent, state: RouteState, config: Config) -> Decision:
    """Rules 5 and 6: keywords, label arming, then deliver to a live session or spawn."""
    scan = _scan(event, config)
    if len(scan.keywords) > 1:
        return _conflict(event, scan, config)
    keyword = scan.keywords[0] if scan.keywords else None
    if keyword in (Keyword.STOP, Keyword.PAUSE, Keyword.RESUME):
        return _control(event, state, config, keyword)
    if keyword in (Keyword.ALLOW, Keyword.DENY, Keyword.ANSWER):
        return _permission(event, state, config, keyword)
    armed = arming_keyword(scan) if source_of(event.source).arms else None
    spawn = None
    if event.own is not None and (armed is not None or _label_arms(event, config)):
        spawn = Spawn(event.own, armed, scan.instruction)
    return _deliver_or(event, state, config, spawn)


_RULES: tuple[_Rule, ...] = (_intake, _self_authored, _close, _authorized, _ci, _route)


def _deliver_or(
    event: WorkEvent, state: RouteState, config: Config, spawn: Spawn | None
) -> Decision:
    """Deliver into the first live session among the event's items; otherwise SPAWN (when the
    event armed its item, and the item is open), otherwise nothing."""
    live = _live_items(event, state, config)
    if live:
        item, session = live[0]
        if session.status is LiveStatus.PAUSED:
            why = f"the session of {item} is paused"
            return _refuse(event, IgnoreReason.SESSION_PAUSED, why, _PAUSED_HINT)
        if event.kind is WorkKind.CI and not is_authorized(session.requester, config):
            return _ignore(
                IgnoreReason.NOT_STARTED_BY_AUTHORIZED,
                f"the session of {item} was not started by anyone in routing.authorizedUsers",
            )
        return Decision((Deliver(item, session.session_id),), (f"{item} has a live session",))
    if spawn is None:
        ci = event.kind is WorkKind.CI
        reason = IgnoreReason.NO_LIVE_SESSION if ci else IgnoreReason.NOT_ARMED
        why = "no live session, and the event does not arm its item"
        return _refuse(event, reason, why, _NO_SESSION_HINT)
    if event.item_closed:
        return _ignore(IgnoreReason.ITEM_CLOSED, f"{spawn.item} is closed; reopen it first")
    how = f"keyword {spawn.keyword.value!r}" if spawn.keyword else "label"
    return Decision((spawn,), (f"{spawn.item} armed by {how}; no live session",))


def _control(event: WorkEvent, state: RouteState, config: Config, keyword: Keyword) -> Decision:
    """stop / pause / resume, applied to the session that receives this event's deliveries."""
    live = _live_items(event, state, config)
    if not live:
        why = f"{keyword.value}: no live session"
        return _refuse(event, IgnoreReason.NO_LIVE_SESSION, why, _NO_SESSION_HINT)
    item, session = live[0]
    paused = session.status is LiveStatus.PAUSED
    if keyword is Keyword.STOP:
        action: Action = Close(item, session.session_id, CloseReason.STOPPED)
    elif keyword is Keyword.PAUSE:
        if paused:
            return _ignore(IgnoreReason.ALREADY_PAUSED, f"the session of {item} is paused")
        action = Pause(item, session.session_id)
    else:
        if not paused:
            return _ignore(IgnoreReason.NOT_PAUSED, f"the session of {item} is not paused")
        action = Resume(item, session.session_id)
    return Decision((action,), (f"{event.actor} asked to {keyword.value} {item}",))


def _permission(event: WorkEvent, state: RouteState, config: Config, keyword: Keyword) -> Decision:
    """allow / deny: answer the permission prompt of the session that receives this event."""
    live = _live_items(event, state, config)
    if not live:
        why = f"{keyword.value}: no live session"
        return _refuse(event, IgnoreReason.NO_LIVE_SESSION, why, _NO_SESSION_HINT)
    item, session = live[0]
    action = AnswerPermission(
        item, session.session_id, event.actor, _answer_of(event.body, config, keyword)
    )
    return Decision((action,), (f"{event.actor} asked to {keyword.value} a prompt of {item}",))


_ANSWERS = (Keyword.ALLOW, Keyword.DENY, Keyword.ANSWER)


def answer_command(text: str | None, config: Config) -> AnswerCommand | None:
    """The ``allow``/``deny``/``answer`` command TEXT gives when that is its one command (as
    in a comment: one command per text); None otherwise. For texts that reach an agent with
    no work item (a reply in a standing session's Slack thread), read by the same rule."""
    scan = scan_commands(text, config.routing.keywords)
    if len(scan.keywords) != 1 or scan.keywords[0] not in _ANSWERS:
        return None
    return _answer_of(text, config, scan.keywords[0])


def _answer_of(text: str | None, config: Config, keyword: Keyword) -> AnswerCommand:
    phrase = getattr(config.routing.keywords, keyword.value)
    return AnswerCommand(
        allow=keyword is Keyword.ALLOW,
        prompt_id=permission_prompt_id(text, phrase),
        answer=answer_after(text, phrase) if keyword is Keyword.ANSWER else None,
    )


def _conflict(event: WorkEvent, scan: CommandScan, config: Config) -> Decision:
    phrases = ", ".join(f"`{getattr(config.routing.keywords, k.value)}`" for k in scan.keywords)
    text = (
        f"this comment contains more than one the-loop command ({phrases}), "
        "so nothing was done. Please post one command per comment."
    )
    actions: tuple[Action, ...] = (Ignore(IgnoreReason.CONFLICTING_KEYWORDS),)
    if event.own is not None:
        actions += (Reply(event.own, text, event.actor),)
    return Decision(actions, (f"conflicting keywords: {phrases}",))


def _scan(event: WorkEvent, config: Config) -> CommandScan:
    if event.kind not in _AUTHORED:
        return CommandScan(())
    return scan_commands(event.body, config.routing.keywords)


def _label_arms(event: WorkEvent, config: Config) -> bool:
    """With ``requireStartCommand`` false: the label on an item just opened or labelled."""
    if config.routing.require_start_command:
        return False
    wanted = config.routing.label.lower()
    if event.kind is WorkKind.LABELED:
        return (event.label or "").lower() == wanted
    return event.kind is WorkKind.OPENED and wanted in {lb.lower() for lb in event.labels}


def _live_items(
    event: WorkEvent, state: RouteState, config: Config
) -> list[tuple[WorkItemRef, LiveSession]]:
    """The event's items that have a live session, in the event's order, limited to
    repositories ``github.repos`` allows (a link can name any repository)."""
    return [
        (item, state.live[item])
        for item in event.items
        if item in state.live and repo_allowed(item, config.github.repos)
    ]


_PAUSED_HINT = "nothing was delivered: the session is paused (`the-loop resume` lifts it)"
_NO_SESSION_HINT = "nothing was delivered: the work item has no live session"


def _refuse(event: WorkEvent, reason: IgnoreReason, why: str, hint: str) -> Decision:
    """Ignore for REASON; a source that ``explains`` also tells the author HINT."""
    if not source_of(event.source).explains or event.own is None:
        return _ignore(reason, why)
    reply = Reply(event.own, hint, event.actor)
    return Decision((Ignore(reason), reply), (why,))


def _ignore(reason: IgnoreReason, why: str) -> Decision:
    return Decision((Ignore(reason),), (why,))


__all__ = [
    "Action",
    "AnswerCommand",
    "AnswerPermission",
    "Close",
    "Deliver",
    "Duplicate",
    "Ignore",
    "KeepOpen",
    "LiveSession",
    "LiveStatus",
    "Pause",
    "PriorDelivery",
    "Reply",
    "RouteState",
    "Spawn",
    "Unauthorized",
    "answer_command",
    "decide",
    "is_authorized",
    "is_start_request",
]
