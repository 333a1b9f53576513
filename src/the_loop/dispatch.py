"""From a GitHub delivery to decisions: accept into the durable inbox, then process it.

The webhook route, the poller and ``the-loop dispatch`` all go through ``accept`` and
``process``, so a replayed payload takes exactly the path a live webhook takes.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from the_loop import engine, sessions
from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.errors import BadInput, LoopError, Unavailable
from the_loop.github.parse import parse_webhook
from the_loop.store import inbox
from the_loop.store.inbox import Accepted, InboxItem, InboxStatus

SOURCE = "dispatch"


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


def github_host(ctx: Ctx) -> str:
    """The GitHub host refs carry: github.com for the public API, else the API's host."""
    host = urlparse(ctx.config.github.api_url).hostname or "github.com"
    return "github.com" if host in {"api.github.com", "github.com"} else host


def accept(ctx: Ctx, event: str, delivery_id: str, body: bytes, source: str) -> Accepted:
    """Commit a delivery to the inbox (before it is acknowledged); emits the intake event."""
    accepted = inbox.accept(ctx.db, delivery_id, event, body, source)
    if accepted.duplicate:
        ev.emit(
            ctx.db,
            "webhook.duplicate",
            source=SOURCE,
            delivery_id=delivery_id,
            event=event,
            status=accepted.status.value,
        )
    else:
        ev.emit(
            ctx.db,
            "webhook.received",
            source=SOURCE,
            delivery_id=delivery_id,
            event=event,
            via=source,
        )
    return accepted


def decode(body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadInput("the payload is not valid JSON") from None
    if not isinstance(payload, dict):
        raise BadInput("the payload must be a JSON object")
    return payload


def process(ctx: Ctx, item: InboxItem, body: bytes) -> DispatchResult:
    """Parse, decide and act on one claimed inbox item; record its outcome. Never raises."""
    prior = engine.PriorDelivery.FAILED if item.attempts > 1 else engine.PriorDelivery.NONE
    try:
        event = parse_webhook(item.event, decode(body), item.delivery_id, github_host(ctx))
        outcome = sessions.handle_event(ctx, event, prior)
    except LoopError as exc:
        return _failed(ctx, item, exc, transient=isinstance(exc, Unavailable))
    except Exception as exc:  # a bug must not wedge the inbox: record and retry
        return _failed(ctx, item, exc, transient=True)
    inbox.succeed(ctx.db, item.delivery_id, outcome.summary)
    ev.emit(
        ctx.db,
        "dispatch.succeeded",
        source=SOURCE,
        delivery_id=item.delivery_id,
        summary=outcome.summary,
    )
    return DispatchResult(
        item.delivery_id,
        item.event,
        False,
        InboxStatus.succeeded.value,
        outcome.summary,
        tuple(outcome.reasons),
    )


def _failed(ctx: Ctx, item: InboxItem, exc: Exception, transient: bool) -> DispatchResult:
    message = str(exc) or repr(exc)
    status = inbox.fail(ctx.db, item, message, transient)
    if status is InboxStatus.dead:
        ev.emit(
            ctx.db,
            "dispatch.dead_lettered",
            source=SOURCE,
            delivery_id=item.delivery_id,
            error=message,
            attempts=item.attempts,
        )
    else:
        ev.emit(
            ctx.db,
            "dispatch.failed",
            source=SOURCE,
            delivery_id=item.delivery_id,
            error=message,
            will_retry=True,
            attempt=item.attempts,
        )
    code = exc.exit_code if isinstance(exc, LoopError) else 1
    return DispatchResult(
        item.delivery_id, item.event, False, status.value, error=message, exit_code=code
    )


def dispatch(
    ctx: Ctx, event: str, body: bytes, delivery_id: str | None = None, source: str = "dispatch"
) -> DispatchResult:
    """Accept and process one payload now, exactly as the webhook path would."""
    delivery = delivery_id or f"dispatch-{uuid.uuid4()}"
    decode(body)
    accepted = accept(ctx, event, delivery, body, source)
    if accepted.duplicate:
        return DispatchResult(delivery, event, True, accepted.status.value, "duplicate")
    claimed = inbox.claim(ctx.db, delivery)
    if claimed is None:
        return DispatchResult(delivery, event, True, "processing", "taken by another worker")
    return process(ctx, *claimed)
