"""``the-loop outbox list|replay``: write-backs waiting, posted and refused."""

from __future__ import annotations

import sys
import time

import click

from the_loop.cli import common
from the_loop.cli.base import format_option, group
from the_loop.errors import BadInput


@group(
    "outbox",
    help="The outbox: write-backs to GitHub and their state.\n\n"
    "Reactions and comments the-loop posts, queued durably until GitHub takes them.",
)
def app() -> None:
    pass


@app.command("list")
@click.option("--status", default=None, help="pending|sending|done|failed")
@click.option("--limit", type=click.IntRange(min=1), default=100)
@format_option()
def list_(status: str | None, limit: int, fmt: str) -> None:
    """List outbox rows, newest first."""
    # lazy: start-up
    from the_loop.outbox import OutboxStatus
    from the_loop.outbox import drain as outbox

    try:
        wanted = OutboxStatus(status) if status else None
    except ValueError:
        raise BadInput(
            f"invalid --status {status!r}: {', '.join(s.value for s in OutboxStatus)}"
        ) from None
    items = outbox.list_items(common.ctx(), wanted, limit)
    if fmt == "json":
        common.print_json(items)
        return
    if not items:
        common.print_empty(
            f"{status} write-backs" if status else "write-backs",
            "reactions and comments for GitHub are queued here as sessions act",
        )
        return
    now = time.time()
    common.print_table(
        ["ID", "WHAT", "KIND", "WORK ITEM", "STATUS", "ATTEMPTS", "CREATED", "RESULT / ERROR"],
        [
            (
                i.id,
                i.what,
                i.kind.value,
                i.work_item or "",
                i.status.value,
                i.attempts,
                common.ago(i.created_at, now),
                (i.last_error or i.result or "")[:80],
            )
            for i in items
        ],
    )


@app.command("replay")
@click.argument("item_id", type=int, help="The outbox id to post again.")
def replay(item_id: int) -> None:
    """Make a failed (or waiting) write-back due now.

    Without a daemon, it is posted at once.
    """
    from the_loop.daemon.serve import daemon_running  # lazy: start-up
    from the_loop.outbox import drain as outbox  # lazy: start-up

    ctx = common.ctx()
    outbox.replay(ctx, item_id)
    if daemon_running(ctx.state_dir):
        print(f"outbox item {item_id} is due again; the daemon will post it")
        return
    after = outbox.send_now(ctx, item_id)
    if after is None:
        print(f"outbox item {item_id} is due again")
        return
    detail = after.result if after.status.value == "done" else after.last_error
    print(f"outbox item {item_id}: {after.status.value} {detail or ''}".rstrip())
    sys.exit(0 if after.status.value == "done" else 1)
