"""Sessions and inbox items by status, as ``the-loop status`` and ``GET /api/v1/status`` show
them. Light on purpose (the two store modules only), so that ``the-loop status`` without a
daemon loads nothing more."""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.store import inbox, sessions

if TYPE_CHECKING:
    from the_loop.context import Ctx


def by_status(ctx: Ctx) -> tuple[dict[str, int], dict[str, int]]:
    """Sessions and inbox items by status; raises the ``StateError`` (or ``sqlite3.Error``) the
    database raised."""
    return sessions.counts_by_status(ctx.db.connect()), inbox.counts(ctx.db)
