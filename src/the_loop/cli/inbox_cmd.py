"""``the-loop inbox list|replay``: the durable inbox of deliveries."""

from __future__ import annotations

import sys
import time

import click

from the_loop.cli import common
from the_loop.cli.base import format_option, group
from the_loop.errors import BadInput


@group("inbox", help="The durable inbox: pending, failed, dead-lettered deliveries.")
def app() -> None:
    pass


@app.command("list")
@click.option("--status", default=None, help="pending|processing|succeeded|failed|dead")
@click.option("--limit", type=click.IntRange(min=1), default=100)
@format_option()
def list_(status: str | None, limit: int, fmt: str) -> None:
    """List inbox items, newest first."""
    # lazy: start-up
    from the_loop.intake import InboxStatus
    from the_loop.intake.ops import inbox_items

    try:
        wanted = InboxStatus(status) if status else None
    except ValueError:
        raise BadInput(
            f"invalid --status {status!r}: {', '.join(s.value for s in InboxStatus)}"
        ) from None
    items = inbox_items(common.ctx(), wanted, limit)
    if fmt == "json":
        common.print_json(items)
        return
    if not items:
        common.print_empty(
            f"{status} inbox items" if status else "inbox items",
            "webhook and poller deliveries are recorded here as they arrive",
        )
        return
    now = time.time()
    common.print_table(
        ["DELIVERY", "EVENT", "STATUS", "ATTEMPTS", "RECEIVED", "OUTCOME / ERROR"],
        [
            (
                i.delivery_id,
                i.event,
                i.status.value,
                i.attempts,
                common.ago(i.received_at, now),
                (i.last_error or i.outcome or "")[:80],
            )
            for i in items
        ],
    )


@app.command("replay")
@click.argument("delivery_id", help="The delivery id to process again.")
def replay(delivery_id: str) -> None:
    """Process a delivery again.

    A failed or dead-lettered one, or any other on purpose.
    """
    from the_loop.intake.ops import ReplayOutcome, replay  # lazy: start-up

    result = replay(common.ctx(), delivery_id)
    if result.outcome is ReplayOutcome.daemon:
        print(f"{delivery_id} is ready again; the daemon will process it")
        return
    if result.outcome is ReplayOutcome.ready:
        print(f"{delivery_id} is ready again")
        return
    common.drain_outbox()
    print(f"{delivery_id}: {result.status} {result.summary or result.error or ''}".rstrip())
    sys.exit(0 if result.error is None else 1)
