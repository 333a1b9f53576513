"""Slack request signatures: ``v0=`` + HMAC-SHA256 of ``v0:<timestamp>:<body>`` with the
app's signing secret, compared in constant time; a timestamp more than ``MAX_AGE_SECONDS``
away from now is refused (a replayed request)."""

from __future__ import annotations

import hashlib
import hmac

MAX_AGE_SECONDS = 300


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` of BODY sent at TIMESTAMP."""
    base = b"v0:" + timestamp.encode() + b":" + body
    return "v0=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


def problem(
    secret: bytes, timestamp: str | None, signature: str | None, body: bytes, now: float
) -> str | None:
    """Why the request is refused, None when it is signed and fresh."""
    if not timestamp or not signature:
        return "missing X-Slack-Request-Timestamp or X-Slack-Signature"
    if not timestamp.isdigit() or len(timestamp) > 12:
        return "invalid X-Slack-Request-Timestamp"
    if abs(now - int(timestamp)) > MAX_AGE_SECONDS:
        return "stale X-Slack-Request-Timestamp (more than 5 minutes away)"
    if not hmac.compare_digest(sign(secret, timestamp, body), signature):
        return "signature does not match"
    return None
