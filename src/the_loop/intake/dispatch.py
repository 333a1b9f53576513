"""From a delivery to decisions: decode it once on intake, keep it in the durable inbox, then
process it.

The path of one delivery:

1. **Intake** (``intake``): the webhook route (or ``the-loop dispatch``) decodes the body once
   and parses it into a typed ``WorkEvent`` (``github.parse.parse_webhook``); the poller builds
   its ``WorkEvent`` directly from GitHub's API objects (``intake_work``). A payload that cannot
   name its work item becomes an intake carrying the parser's ``BadInput`` message instead.
2. **Accept** (``accept``; ``accept_durably`` and ``accept_slack_durably`` for the webhook
   routes): the raw body (empty for the poller), the serialized typed event (or the refusal)
   and the lane key are committed to the inbox before the delivery is acknowledged. A refused
   request is recorded with ``record_rejection``.
3. **Process** (``process``): the handler of the item's source (``HANDLERS``) takes it: a
   stored work event is deserialized (no webhook JSON decoding, no parsing) and handed to
   ``sessions.handle_event``; a Slack thread reply becomes a work event there too. A refusal
   is recorded dead at once (permanent, never retried), exactly as a parse failure always was.

Rows accepted before the inbox kept the typed form (migration ``0011_inbox_work``) carry only
the body: ``stored_intake`` derives their intake from it when they are claimed.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias
from urllib.parse import urlparse

from the_loop import engine
from the_loop import events as ev
from the_loop.cluster import nodes, placement
from the_loop.context import Ctx
from the_loop.errors import BadInput, LoopError, StateError, Unavailable
from the_loop.faults import crash_point
from the_loop.github import payloads as github_payloads
from the_loop.github.parse import parse_webhook
from the_loop.intake import slack as slack_inbound
from the_loop.refs import OWNER_RE, WorkItemRef
from the_loop.slack import intake as slack_intake
from the_loop.store import inbox
from the_loop.store.events import NewEvent
from the_loop.store.inbox import Accepted, Claimed, InboxStatus
from the_loop.store.intake_writer import writer_for
from the_loop.work import WorkEvent, WorkKind
from the_loop.work_items import service as sessions

SOURCE = "dispatch"
_REFUSED = "refused: "
"""Prefix of a stored intake that names no work event (the rest is the reason)."""


@dataclass
class DispatchResult:
    """What happened to one delivery: accepted or duplicate, and what processing did."""

    delivery_id: str
    event: str
    duplicate: bool
    status: str
    summary: str = ""
    reasons: tuple[str, ...] = ()
    error: str | None = None
    exit_code: int = 0


@dataclass(frozen=True, slots=True)
class Intake:
    """One delivery decoded once: the work event it names, or why it can name none.

    ``delivery_id`` is the inbox key exactly as received (the event's own id is the parser's
    normalized form of it). Exactly one of ``work`` and ``refusal`` is set; a refusal is the
    ``BadInput`` message of a payload that cannot become a work event, recorded permanently
    failed when processed.
    """

    event_name: str
    delivery_id: str
    work: WorkEvent | None = None
    refusal: str | None = None

    def __post_init__(self) -> None:
        if (self.work is None) == (self.refusal is None):
            raise ValueError("an intake carries exactly one of a work event and a refusal")

    @property
    def lane(self) -> str:
        """The worker lane: deliveries about one work item share ``OWNER/REPO#N`` (and run in
        order); CI runs and item-less deliveries share ``OWNER/REPO#<event type>``; anything
        without a repository, and every refusal, runs alone under its delivery id."""
        work = self.work
        if work is None:
            return self.delivery_id
        if work.own is not None and work.kind is not WorkKind.CI:
            return f"{work.own.full_name}#{work.own.number}"
        if work.repository:
            return f"{work.repository}#{work.event_name}"
        return self.delivery_id

    def stored(self) -> str:
        """The text kept in the inbox's ``work`` column (read back by ``stored_intake``)."""
        if self.work is not None:
            return self.work.to_json()
        return f"{_REFUSED}{self.refusal}"


def github_host(ctx: Ctx) -> str:
    """The GitHub host refs carry: github.com for the public API, else the API's host."""
    return _host_of(ctx.config.github.api_url)


@functools.lru_cache(maxsize=8)
def _host_of(api_url: str) -> str:
    host = urlparse(api_url).hostname or "github.com"
    return "github.com" if host in {"api.github.com", "github.com"} else host


def decode(body: bytes) -> dict[str, Any]:
    """The JSON object BODY holds; ``BadInput`` when it is not JSON or not an object."""
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadInput("the payload is not valid JSON") from None
    if not isinstance(payload, dict):
        raise BadInput("the payload must be a JSON object")
    return payload


def intake(ctx: Ctx, event_name: str, delivery_id: str, payload: dict[str, Any]) -> Intake:
    """Parse a decoded webhook PAYLOAD once; a payload that cannot name its work item gives
    a refusal (never raises for the payload's content)."""
    try:
        work = parse_webhook(event_name, payload, delivery_id, github_host(ctx))
    except BadInput as exc:
        return Intake(event_name, delivery_id, refusal=str(exc))
    return Intake(event_name, delivery_id, work=work)


def intake_work(work: WorkEvent) -> Intake:
    """The intake of a work event built without a webhook (the poller's)."""
    return Intake(work.event_name, work.delivery_id, work=work)


def stored_intake(ctx: Ctx, claimed: Claimed) -> Intake:
    """The intake of a claimed inbox item: deserialized from its ``work`` column; derived from
    its raw body (decoded and parsed here) for rows stored before that column existed, or
    whose stored form cannot be read. Never raises for the row's content."""
    item = claimed.item
    if claimed.work is not None:
        if claimed.work.startswith(_REFUSED):
            return Intake(item.event, item.delivery_id, refusal=claimed.work[len(_REFUSED) :])
        try:
            return Intake(item.event, item.delivery_id, work=WorkEvent.from_json(claimed.work))
        except ValueError as exc:
            if not claimed.payload:
                return Intake(item.event, item.delivery_id, refusal=str(exc))
    try:
        payload = decode(claimed.payload)
    except BadInput as exc:
        return Intake(item.event, item.delivery_id, refusal=str(exc))
    return intake(ctx, item.event, item.delivery_id, payload)


def lane(ctx: Ctx, claimed: Claimed) -> str:
    """The worker lane of a claimed item (stored at intake; derived for older rows)."""
    return claimed.lane or stored_intake(ctx, claimed).lane


def accept(ctx: Ctx, delivery: Intake, body: bytes, source: str) -> Accepted:
    """Commit a delivery (its raw BODY and its intake) to the inbox, with the intake event
    (``webhook.received`` or ``webhook.duplicate``) in the same transaction; blocking, with
    the database's ordinary durability (the CLI's and the poller's path)."""
    return inbox.accept_in_transaction(ctx.db, acceptance(delivery, body, source))


async def accept_durably(ctx: Ctx, delivery: Intake, body: bytes, source: str) -> Accepted:
    """``accept`` for an acknowledgement: returns once the acceptance and its event are on
    stable storage (a fully-synced commit shared with every acceptance queued meanwhile, see
    ``store.intake_writer``); never blocks the event loop. Raises ``StateError`` (or the
    ``sqlite3.Error``) the commit raised."""
    return await writer_for(ctx.db).accept(acceptance(delivery, body, source))


def acceptance(delivery: Intake, body: bytes, source: str) -> inbox.Acceptance:
    """What the inbox commits for DELIVERY: the body, the stored intake, its lane, and the
    intake event recording the outcome."""
    event, delivery_id = delivery.event_name, delivery.delivery_id

    def record(accepted: Accepted) -> NewEvent:
        if accepted.duplicate:
            return ev.build(
                "webhook.duplicate",
                source=SOURCE,
                delivery_id=delivery_id,
                event=event,
                status=accepted.status.value,
            )
        return ev.build(
            "webhook.received", source=SOURCE, delivery_id=delivery_id, event=event, via=source
        )

    return inbox.Acceptance(
        delivery_id, event, body, source, delivery.stored(), delivery.lane, record
    )


async def accept_slack_durably(
    ctx: Ctx, delivery: slack_intake.Intake, body: bytes, retry: str | None
) -> Accepted:
    """``accept_durably`` for a Slack request (an event or a button press), keyed by Slack's
    own id, with its ``slack.received`` event (``webhook.duplicate`` for one already stored);
    RETRY is Slack's retry number and reason, recorded with the event."""
    return await writer_for(ctx.db).accept(slack_acceptance(delivery, body, retry))


def slack_acceptance(
    delivery: slack_intake.Intake, body: bytes, retry: str | None
) -> inbox.Acceptance:
    """What the inbox commits for a Slack DELIVERY: the body, its stored work, its lane, and
    the intake event recording the outcome."""
    source = slack_intake.SOURCE

    def record(accepted: Accepted) -> NewEvent:
        if accepted.duplicate:
            return ev.build(
                "webhook.duplicate",
                source=source,
                delivery_id=delivery.delivery_id,
                event=delivery.event_name,
                status=accepted.status.value,
                retry=retry,
            )
        return ev.build(
            "slack.received",
            source=source,
            delivery_id=delivery.delivery_id,
            event=delivery.event_name,
            retry=retry,
        )

    return inbox.Acceptance(
        delivery.delivery_id,
        delivery.event_name,
        body,
        source,
        delivery.stored(),
        delivery.lane,
        record,
    )


def record_rejection(
    ctx: Ctx, source: str, delivery_id: str | None, reason: str, status: int, suppressed: int
) -> None:
    """Record a refused request (``webhook.rejected``, with how many like it were suppressed
    since the last one) with the inbox's next commit, or alone; never waits."""
    writer_for(ctx.db).record(
        ev.build(
            "webhook.rejected",
            source=source,
            delivery_id=delivery_id,
            reason=reason,
            status=status,
            suppressed=suppressed,
        )
    )


def process(ctx: Ctx, claimed: Claimed) -> DispatchResult:
    """Decide and act on one claimed inbox item; record its outcome. Never raises."""
    item = claimed.item
    prior = engine.PriorDelivery.FAILED if item.attempts > 1 else engine.PriorDelivery.NONE
    if ctx.db.shared and not inbox.holds_claim(ctx.db, item.delivery_id, nodes.node_name(ctx)):
        # declared dead meanwhile: the claim was released and is another node's now
        return DispatchResult(item.delivery_id, item.event, False, "released", "claim released")
    nodes.begin_work(ctx)
    try:
        handler = HANDLERS.get(item.source, _work_event)
        handled = handler(ctx, claimed, prior)
    except (placement.Elsewhere, placement.RunsElsewhere) as exc:  # e.g. a Slack reply
        return _forward(ctx, claimed, exc.node)
    except LoopError as exc:
        transient = isinstance(exc, Unavailable | StateError)  # the state may come back
        return _failed(ctx, claimed, exc, transient=transient)
    except Exception as exc:  # the inbox processing edge: a bug must not wedge the inbox
        return _failed(ctx, claimed, exc, transient=True)
    finally:
        nodes.end_work()  # the thread may serve an operator's message next
    crash_point("dispatch-before-outcome")
    summary = handled.summary
    done = ev.build(
        "dispatch.succeeded", source=SOURCE, delivery_id=item.delivery_id, summary=summary
    )
    events = (*handled.records, done)  # what it decided, then its outcome: one transaction
    inbox.succeed(ctx.db, item.delivery_id, summary, _claimer(ctx), events=events)
    return DispatchResult(
        item.delivery_id, item.event, False, InboxStatus.succeeded.value, summary, handled.reasons
    )


Handler: TypeAlias = Callable[[Ctx, Claimed, engine.PriorDelivery], inbox.Handled]
"""Processes a claimed inbox item of one source: its summary, the engine's reasons and the
events left to commit with its outcome."""


def _work_event(ctx: Ctx, claimed: Claimed, prior: engine.PriorDelivery) -> inbox.Handled:
    """A stored ``WorkEvent`` (GitHub's webhook, poller and ``the-loop dispatch``)."""
    delivery = stored_intake(ctx, claimed)
    if delivery.work is None:
        raise BadInput(delivery.refusal or "the delivery names no work event")
    outcome = sessions.handle_event(ctx, delivery.work, prior)
    return inbox.Handled(outcome.summary, tuple(outcome.reasons), tuple(outcome.records))


def _slack(ctx: Ctx, claimed: Claimed, prior: engine.PriorDelivery) -> inbox.Handled:
    """A stored Slack request: a thread reply (made a ``WorkEvent``) or a button press."""
    return slack_inbound.process(ctx, claimed.work or "", claimed.item.delivery_id, prior)


HANDLERS: Mapping[str, Handler] = {slack_intake.SOURCE: _slack}
"""The inbox's sources whose stored form is not a ``WorkEvent``, by ``inbox.source``; every
other source (``webhook``, ``poller``, ``dispatch``, …) is handled by ``_work_event``."""


def _claimer(ctx: Ctx) -> str | None:
    """Whose claim an outcome is recorded under: this node's on a shared database."""
    return nodes.shared_name(ctx)


def _forward(ctx: Ctx, claimed: Claimed, node: str) -> DispatchResult:
    """Hand CLAIMED to NODE (its item's session runs there, or it has a free slot)."""
    item = claimed.item
    handed = ev.build("dispatch.forwarded", source=SOURCE, delivery_id=item.delivery_id, node=node)
    inbox.forward(ctx.db, item.delivery_id, nodes.node_name(ctx), node, event=handed)
    return DispatchResult(item.delivery_id, item.event, False, "forwarded", f"to node {node}")


def _failed(ctx: Ctx, claimed: Claimed, exc: Exception, transient: bool) -> DispatchResult:
    item = claimed.item
    message = str(exc) or repr(exc)
    if inbox.failure_status(item, transient) is InboxStatus.dead:
        event = ev.build(
            "dispatch.dead_lettered",
            source=SOURCE,
            delivery_id=item.delivery_id,
            error=message,
            attempts=item.attempts,
        )
    else:
        event = ev.build(
            "dispatch.failed",
            source=SOURCE,
            delivery_id=item.delivery_id,
            error=message,
            will_retry=True,
            attempt=item.attempts,
        )
    status = inbox.fail(ctx.db, item, message, transient, _claimer(ctx), event=event)
    code = exc.exit_code if isinstance(exc, LoopError) else 1
    return DispatchResult(
        item.delivery_id, item.event, False, status.value, error=message, exit_code=code
    )


def dispatch(
    ctx: Ctx, event: str, body: bytes, delivery_id: str | None = None, source: str = "dispatch"
) -> DispatchResult:
    """Accept and process one webhook payload now, exactly as the webhook path would.
    Raises ``BadInput`` (storing nothing) when BODY is not a JSON object."""
    delivery = delivery_id or f"dispatch-{uuid.uuid4()}"
    return _now(ctx, intake(ctx, event, delivery, decode(body)), body, source)


def dispatch_comment(
    ctx: Ctx, item: str, text: str, login: str, delivery_id: str | None = None
) -> DispatchResult:
    """Accept and process LOGIN's comment TEXT on ITEM (``OWNER/REPO#N``) as the
    ``issue_comment`` webhook GitHub would send for it: the same inbox, rules and
    authorization. Raises ``BadInput`` (storing nothing) for a bad item, login or text."""
    ref = WorkItemRef.parse(item)
    if not OWNER_RE.match(login):
        raise BadInput(f"invalid --as {login!r}: a GitHub login (letters, digits and '-')")
    payload = github_payloads.issue_comment(ref, text, login)
    body = json.dumps(payload).encode()
    return dispatch(ctx, "issue_comment", body, delivery_id)


def dispatch_work(ctx: Ctx, work: WorkEvent, source: str) -> DispatchResult:
    """Accept and process a work event built without a webhook (the poller's) now, through
    the same inbox: its delivery id dedupes it exactly like a webhook's."""
    return _now(ctx, intake_work(work), b"", source)


def _now(ctx: Ctx, delivery: Intake, body: bytes, source: str) -> DispatchResult:
    event, delivery_id = delivery.event_name, delivery.delivery_id
    accepted = accept(ctx, delivery, body, source)
    if accepted.duplicate:
        return DispatchResult(delivery_id, event, True, accepted.status.value, "duplicate")
    claimed = inbox.claim(ctx.db, delivery_id, nodes.node_name(ctx))
    if claimed is None:
        return DispatchResult(delivery_id, event, True, "processing", "taken by another worker")
    return process(ctx, claimed)
