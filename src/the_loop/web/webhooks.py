"""``POST <github.webhook.path>``: signed GitHub deliveries into the durable inbox.

The delivery is committed to the inbox before the 202 is sent; processing happens in the inbox
worker, so the acknowledgement never waits for an agent. Any well-formed signed delivery of any
event type is acknowledged; types outside the filter are ignored later, never refused. The body
is decoded here, once, and parsed into its typed work event (``dispatch.intake``); the inbox
keeps the raw body next to the typed form, and no later stage decodes it again.
"""

from __future__ import annotations

import os
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from the_loop import dispatch
from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.github.signature import verify_signature
from the_loop.metrics import METRICS

MAX_BODY = 25 * 1024 * 1024
SOURCE = "webhook"
_DELIVERY_MAX = 200


def _reject(ctx: Ctx, status: int, code: str, message: str, delivery: str | None) -> JSONResponse:
    ev.emit(
        ctx.db,
        "webhook.rejected",
        source=SOURCE,
        delivery_id=delivery,
        reason=message,
        status=status,
    )
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def _read_body(request: Request) -> bytes | None:
    """The raw body, or None when it exceeds ``MAX_BODY`` (checked while streaming)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
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

    @router.post(ctx.config.github.webhook.path, include_in_schema=False)
    async def github_webhook(request: Request) -> JSONResponse:
        started = time.perf_counter()
        delivery = request.headers.get("x-github-delivery")
        body = await _read_body(request)
        if body is None:
            return _reject(ctx, 413, "payload_too_large", "body over 25 MB", delivery)
        problem = _signature_problem(ctx, body, request.headers.get("x-hub-signature-256"))
        if problem is not None:
            return _reject(ctx, 401, "unauthorized", problem, delivery)
        event = request.headers.get("x-github-event", "")
        if not event or len(event) > 100 or not event.replace("_", "").isalnum():
            return _reject(ctx, 400, "bad_input", "missing or invalid X-GitHub-Event", delivery)
        if not delivery or len(delivery) > _DELIVERY_MAX or not delivery.isprintable():
            return _reject(ctx, 400, "bad_input", "missing or invalid X-GitHub-Delivery", None)
        try:
            payload = dispatch.decode(body)
        except BadInput:
            return _reject(ctx, 400, "bad_input", "the payload is not a JSON object", delivery)
        if event == "ping":
            return JSONResponse({"ok": True, "event": "ping"}, status_code=200)
        intake = dispatch.intake(ctx, event, delivery, payload)
        accepted = dispatch.accept(ctx, intake, body, SOURCE)
        ctx.inbox_wake.set()
        METRICS.observe_webhook(time.perf_counter() - started)
        return JSONResponse(
            {"accepted": True, "deliveryId": delivery, "duplicate": accepted.duplicate},
            status_code=202,
        )

    return router
