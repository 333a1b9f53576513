"""``POST /webhooks/slack`` (Events API) and ``POST /webhooks/slack/interactions`` (buttons).

Both check Slack's signature over ``v0:<timestamp>:<body>`` in constant time and refuse a
timestamp more than five minutes away (401, nothing stored but a sampled rejection). The
``url_verification`` handshake is answered with its challenge. Anything else is decoded once
(``slack.intake``) and committed to the durable inbox, with its ``slack.received`` event, in
the same fully-synced group commit as GitHub's deliveries (``dispatch.accept_slack_durably``),
before the 200 is sent; the inbox key is the event id (a press: its trigger id), so Slack's
retries (``X-Slack-Retry-Num``) are acknowledged without being processed twice. Processing
happens in the inbox worker. The daemon serves both routes without FastAPI's router
(``web.direct``).
"""

from __future__ import annotations

import asyncio
import os
import time

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from starlette.requests import ClientDisconnect

from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.intake import dispatch
from the_loop.slack import intake as slack_intake
from the_loop.slack.signature import problem as signature_problem
from the_loop.views.metrics import METRICS
from the_loop.web.webhooks import BODY_SECONDS, RejectionSampler, read_body, record_rejection

EVENTS_PATH = "/webhooks/slack"
INTERACTIONS_PATH = "/webhooks/slack/interactions"
MAX_BODY = 1024 * 1024
"""Slack's requests are small; anything over 1 MiB is refused (413)."""
SOURCE = slack_intake.SOURCE


def slack_router(ctx: Ctx) -> APIRouter:
    """The two Slack routes (404 while ``slack.enabled`` is off, read on every request)."""
    router = APIRouter()
    sampler = RejectionSampler()

    def reject(status: int, code: str, message: str) -> JSONResponse:
        return record_rejection(ctx, sampler, status, code, message, None, SOURCE)

    async def verified(request: Request) -> bytes | JSONResponse:
        if not ctx.config.slack.enabled:  # read live: a reload switches Slack on or off
            return JSONResponse(
                {"error": {"code": "not_found", "message": "slack.enabled is off"}},
                status_code=404,
            )
        try:
            async with asyncio.timeout(BODY_SECONDS):
                body = await read_body(request, MAX_BODY)
        except TimeoutError:
            return reject(408, "timeout", f"body not received within {BODY_SECONDS:g} s")
        except ClientDisconnect:
            METRICS.count_disconnect()
            return JSONResponse({"error": {"code": "disconnected"}}, status_code=400)
        if body is None:
            return reject(413, "payload_too_large", "body over 1 MiB")
        secret = os.environ.get(ctx.config.slack.signing_secret_env, "")
        if not secret:
            env = ctx.config.slack.signing_secret_env
            return reject(401, "unauthorized", f"no Slack signing secret configured (${env})")
        problem = signature_problem(
            secret.encode(),
            request.headers.get("x-slack-request-timestamp"),
            request.headers.get("x-slack-signature"),
            body,
            time.time(),
        )
        if problem is not None:
            return reject(401, "unauthorized", problem)
        return body

    async def accept(intake: slack_intake.Intake, body: bytes, request: Request) -> JSONResponse:
        retry = request.headers.get("x-slack-retry-num")
        retry_note = None
        if retry is not None:
            reason = request.headers.get("x-slack-retry-reason", "")
            retry_note = f"{retry[:8]} {reason[:40]}".strip()
        accepted = await dispatch.accept_slack_durably(ctx, intake, body, retry_note)
        ctx.inbox_wake.set()
        return JSONResponse(
            {"accepted": True, "deliveryId": intake.delivery_id, "duplicate": accepted.duplicate}
        )

    @router.post(EVENTS_PATH, include_in_schema=False)
    async def slack_events(request: Request) -> Response:
        started = time.perf_counter()
        body = await verified(request)
        if isinstance(body, JSONResponse):
            return body
        try:
            payload = dispatch.decode(body)
        except BadInput:
            return reject(400, "bad_input", "the payload is not a JSON object")
        kind = payload.get("type")
        if kind == "url_verification":
            challenge = payload.get("challenge")
            if not isinstance(challenge, str) or len(challenge) > 200:
                return reject(400, "bad_input", "url_verification without a challenge")
            return JSONResponse({"challenge": challenge})
        if kind != "event_callback":
            return JSONResponse({"ok": True, "ignored": str(kind)[:40]})
        try:
            intake = slack_intake.event_intake(payload)
        except BadInput as exc:
            return reject(400, "bad_input", exc.message)
        answer = await accept(intake, body, request)
        METRICS.observe_webhook(time.perf_counter() - started)
        return answer

    @router.post(INTERACTIONS_PATH, include_in_schema=False)
    async def slack_interactions(request: Request) -> Response:
        body = await verified(request)
        if isinstance(body, JSONResponse):
            return body
        try:
            intake = slack_intake.interaction_intake(body)
        except BadInput as exc:
            return reject(400, "bad_input", exc.message)
        await accept(intake, body, request)
        return Response(status_code=200)

    return router
