"""Slack's request signature: ``v0=`` HMAC-SHA256 over ``v0:<timestamp>:<body>``, and the
five-minute window."""

from __future__ import annotations

import hashlib
import hmac

from the_loop.slack.signature import problem, sign

SECRET = b"8f742231b10e8888abcd99yyyzzz85a5"
BODY = b"token=xyz&team_id=T1&command=%2Fweather&text=94070"


def test_the_signature_is_the_documented_hmac() -> None:
    expected = hmac.new(SECRET, b"v0:1531420618:" + BODY, hashlib.sha256).hexdigest()
    assert sign(SECRET, "1531420618", BODY) == f"v0={expected}"


def test_fresh_and_signed_passes_anything_else_is_refused() -> None:
    now = 1_700_000_000.0
    stamp = str(int(now) - 299)
    good = sign(SECRET, stamp, BODY)
    assert problem(SECRET, stamp, good, BODY, now) is None
    assert problem(SECRET, stamp, good, BODY + b"x", now) == "signature does not match"
    assert problem(b"other", stamp, good, BODY, now) == "signature does not match"
    stale = str(int(now) - 301)
    assert "stale" in str(problem(SECRET, stale, sign(SECRET, stale, BODY), BODY, now))
    ahead = str(int(now) + 301)
    assert "stale" in str(problem(SECRET, ahead, sign(SECRET, ahead, BODY), BODY, now))
    assert problem(SECRET, None, good, BODY, now) is not None
    assert problem(SECRET, stamp, None, BODY, now) is not None
    assert problem(SECRET, "12ab", good, BODY, now) == "invalid X-Slack-Request-Timestamp"
    assert problem(SECRET, stamp, good.upper(), BODY, now) == "signature does not match"
