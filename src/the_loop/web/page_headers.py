"""The headers every HTML page carries, the login page included: no caching, no sniffing, no
framing, no referrer to other origins, and a content policy that runs only the server's own
scripts (issue 29: the login page had only ``Cache-Control``)."""

from __future__ import annotations

PAGE_HEADERS = {
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        "img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
        "form-action 'self'"
    ),
}
