"""Webhook signature verification (``X-Hub-Signature-256``)."""

from __future__ import annotations

import hashlib
import hmac

from the_loop.github.signature import sign, verify_signature

SECRET = b"It's a Secret to Everybody"
BODY = b"Hello, World!"


def test_sign_matches_githubs_documented_example() -> None:
    # docs.github.com "Validating webhook deliveries" test values
    assert sign(SECRET, BODY) == (
        "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    )


def test_valid_signature_verifies() -> None:
    assert verify_signature(SECRET, BODY, sign(SECRET, BODY))


def test_wrong_signature_secret_or_body_fails() -> None:
    good = sign(SECRET, BODY)
    assert not verify_signature(SECRET, BODY + b" ", good)
    assert not verify_signature(b"another secret", BODY, good)
    flipped = good[:-1] + ("0" if good[-1] != "0" else "1")
    assert not verify_signature(SECRET, BODY, flipped)
    assert not verify_signature(SECRET, BODY, good[:-2])


def test_missing_or_empty_header_fails() -> None:
    assert not verify_signature(SECRET, BODY, None)
    assert not verify_signature(SECRET, BODY, "")
    assert not verify_signature(SECRET, BODY, "sha256=")


def test_wrong_prefix_fails() -> None:
    digest = hmac.new(SECRET, BODY, hashlib.sha256).hexdigest()
    sha1 = hmac.new(SECRET, BODY, hashlib.sha1).hexdigest()
    assert not verify_signature(SECRET, BODY, digest)
    assert not verify_signature(SECRET, BODY, f"sha1={sha1}")
    assert not verify_signature(SECRET, BODY, f"SHA256={digest}")


def test_non_ascii_header_and_empty_secret_fail() -> None:
    assert not verify_signature(SECRET, BODY, "sha256=é" + "0" * 63)
    assert not verify_signature(b"", BODY, sign(b"", BODY))
