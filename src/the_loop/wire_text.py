"""The text of the output contract, with the standard library only: ISO 8601 UTC times with
milliseconds and JSON text. ``the_loop.wire`` renders models through these, and the CLI's fast
path (``cli.fast``) renders plain rows through the same two functions.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def iso(value: float | datetime) -> str:
    """VALUE (epoch seconds, or a datetime; a naive one is taken as UTC) as ISO 8601 UTC with
    milliseconds: ``2026-12-01T12:34:56.789Z``."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    else:
        moment = datetime.fromtimestamp(value, UTC)
    moment = moment.astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def json_text(values: Any, indent: int | None = 2) -> str:
    """Plain JSON VALUES as text (non-ASCII kept); compact when INDENT is None."""
    import json  # lazy: start-up (`json` loads `re`; the fast path's tables need neither)

    separators = (",", ":") if indent is None else None
    return json.dumps(values, indent=indent, separators=separators, ensure_ascii=False)
