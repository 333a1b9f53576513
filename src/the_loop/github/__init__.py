"""GitHub: webhook payload parsing, and (elsewhere in this package) the API, poller, write-backs."""

__all__ = [
    "api",
    "errors",
    "etag_store",
    "parse",
    "payloads",
    "poll_events",
    "rate_gates",
    "signature",
    "token",
    "writeback",
]
