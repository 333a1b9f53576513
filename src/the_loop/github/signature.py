"""GitHub webhook signatures: HMAC-SHA256 of the raw body in ``X-Hub-Signature-256``.

The header reads ``sha256=<64 lowercase hex digits>``. Verification compares in constant time
and never raises: anything malformed is simply not a valid signature.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "sha256="


def sign(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value GitHub would send for BODY signed with SECRET."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """True when HEADER is ``sha256=`` + the HMAC-SHA256 of BODY under SECRET.

    False for a missing header, another scheme (``sha1=``), wrong length or digits, or an
    empty secret (an empty key would let anyone sign). Constant time in the digest compared.
    """
    if not secret or not header or not header.startswith(PREFIX):
        return False
    expected = sign(secret, body)
    try:
        return hmac.compare_digest(expected.encode("ascii"), header.strip().encode("ascii"))
    except UnicodeEncodeError:
        return False
