"""``POST <github.webhook.path>``: signed GitHub deliveries into the durable inbox.

The 202 is sent only after the delivery is on stable storage: it is committed to the inbox,
with its ``webhook.received`` event, in a fully-synced group commit shared with every delivery
accepted meanwhile (``dispatch.accept_durably``), off the event loop.
The daemon serves this route without FastAPI's router (``web.direct``).
Processing happens in the inbox worker, so the acknowledgement never waits for an agent. Any
well-formed signed delivery of any event type is acknowledged; types outside the filter are
ignored later, never refused. The body is decoded here, once, and parsed into its typed work
event (``dispatch.intake``); the inbox keeps the raw body next to the typed form, and no later
stage decodes it again. A delivery id already stored is answered ``duplicate`` and not
processed again.

A refused request costs no synchronous write and a bounded amount of storage: every refusal
is counted in metrics, but at most one ``webhook.rejected`` event per (status, reason) is
written per ``REJECTION_WINDOW_SECONDS``, carrying how many were suppressed since the last one,
with the delivery id only when it has the shape of one (else none). The body must arrive
within ``BODY_SECONDS`` (else ``408``); a client that goes away mid-body is logged in one line.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.github.signature import verify_signature
from the_loop.intake import dispatch
from the_loop.views.metrics import METRICS

MAX_BODY = 25 * 1024 * 1024
BODY_SECONDS = 10.0
"""The whole body must be read within this (GitHub itself gives up on a delivery after 10 s)."""
REJECTION_WINDOW_SECONDS = 60.0
SOURCE = "webhook"
_DELIVERY_MAX = 200
_STORED_DELIVERY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
_log = logging.getLogger("the_loop.webhooks")


class RejectionSampler:
    """At most one recorded rejection per key per WINDOW seconds; counts the rest."""

    def __init__(self, window: float = REJECTION_WINDOW_SECONDS) -> None:
        self.window = window
        self._lock = threading.Lock()
        self._last: dict[tuple[int, str], float] = {}
        self._suppressed: dict[tuple[int, str], int] = {}

    def admit(self, key: tuple[int, str], now: float) -> int | None:
        """None when this rejection is only counted; else how many of KEY were suppressed
        since the last recorded one (the caller records this one with that count)."""
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < self.window:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            self._last[key] = now
            return self._suppressed.pop(key, 0)


def _stored_delivery(delivery: str | None) -> str | None:
    """DELIVERY as it may be stored for a rejection: only a short id of GitHub's shape."""
    if delivery is not None and _STORED_DELIVERY.fullmatch(delivery):
        return delivery
    return None


def record_rejection(
    ctx: Ctx,
    sampler: RejectionSampler,
    status: int,
    code: str,
    message: str,
    delivery: str | None,
    source: str = SOURCE,
) -> JSONResponse:
    """Count a refused request, record it (sampled) and answer STATUS with the error."""
    METRICS.count_rejection(status, code)
    suppressed = sampler.admit((status, message), time.monotonic())
    if suppressed is not None:
        dispatch.record_rejection(
            ctx, source, _stored_delivery(delivery), message, status, suppressed
        )
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def read_body(request: Request, limit: int = MAX_BODY) -> bytes | None:
    """The raw body, or None when it exceeds LIMIT (checked while streaming)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _signature_problem(ctx: Ctx, body: bytes, header: str | None) -> str | None:
    cfg = ctx.config.github.webhook
    secret = os.environ.get(cfg.secret_env, "")
    if secret:
        if header is None and cfg.allow_unsigned:
            return None
        if not verify_signature(secret.encode(), body, header):
            return "missing signature" if header is None else "signature does not match"
        return None
    if cfg.allow_unsigned:
        return None
    return f"no webhook secret configured (${cfg.secret_env}) and allowUnsigned is false"


def github_router(ctx: Ctx) -> APIRouter:
    """The webhook route, mounted at ``github.webhook.path``."""
    router = APIRouter()
    sampler = RejectionSampler()

    def reject(status: int, code: str, message: str, delivery: str | None) -> JSONResponse:
        return record_rejection(ctx, sampler, status, code, message, delivery)

    @router.post(ctx.config.github.webhook.path, include_in_schema=False)
    async def github_webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        delivery = request.headers.get("x-github-delivery")
        try:
            async with asyncio.timeout(BODY_SECONDS):
                body = await read_body(request)
        except TimeoutError:
            return reject(408, "timeout", f"body not received within {BODY_SECONDS:g} s", None)
        except ClientDisconnect:
            METRICS.count_disconnect()
            client = request.client.host if request.client else "?"
            _log.warning("webhook: the client %s disconnected before sending the body", client)
            return JSONResponse({"error": {"code": "disconnected"}}, status_code=400)
        if body is None:
            return reject(413, "payload_too_large", "body over 25 MB", delivery)
        problem = _signature_problem(ctx, body, request.headers.get("x-hub-signature-256"))
        if problem is not None:
            return reject(401, "unauthorized", problem, delivery)
        event = request.headers.get("x-github-event", "")
        if not event or len(event) > 100 or not event.replace("_", "").isalnum():
            return reject(400, "bad_input", "missing or invalid X-GitHub-Event", delivery)
        if not delivery or len(delivery) > _DELIVERY_MAX or not delivery.isprintable():
            return reject(400, "bad_input", "missing or invalid X-GitHub-Delivery", None)
        try:
            payload = dispatch.decode(body)
        except BadInput:
            return reject(400, "bad_input", "the payload is not a JSON object", delivery)
        if event == "ping":
            return JSONResponse({"ok": True, "event": "ping"}, status_code=200)
        intake = dispatch.intake(ctx, event, delivery, payload)
        accepted = await dispatch.accept_durably(ctx, intake, body, SOURCE)
        ctx.inbox_wake.set()
        METRICS.observe_webhook(time.perf_counter() - started)
        return JSONResponse(
            {"accepted": True, "deliveryId": delivery, "duplicate": accepted.duplicate},
            status_code=202,
        )

    return router
