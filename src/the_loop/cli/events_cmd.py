"""``the-loop events``: query, follow and list the event catalogue."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from the_loop.cli import common
from the_loop.cli.base import command, format_option
from the_loop.cli.plain import event_line

if TYPE_CHECKING:
    from the_loop import events as ev


@command("events")
@click.option("--type", "-t", "type_", multiple=True, help="Type glob, e.g. 'session.*'.")
@click.option("--work-item", default=None, help="github:OWNER/REPO#N")
@click.option("--standing", default=None, help="Standing session name.")
@click.option("--level", default="debug", help="Minimum level.")
@click.option("--since", default=None, help="30s, 15m, 2h, 1d or ISO time.")
@click.option("--limit", "-n", type=click.IntRange(1, 100_000), default=50)
@format_option("table", "json", "jsonl")
@click.option("--follow", "-f", is_flag=True, help="Stream new events.")
@click.option("--types", is_flag=True, help="Print the event catalogue.")
def events(
    type_: tuple[str, ...],
    work_item: str | None,
    standing: str | None,
    level: str,
    since: str | None,
    limit: int,
    fmt: str,
    follow: bool,
    types: bool,
) -> None:
    """Show the event log: every decision the-loop made, newest last."""
    if types:
        _print_catalogue(fmt)
        return
    if not follow:
        from the_loop.cli import remote  # lazy: start-up

        answer = remote.events(list(type_), work_item, standing, level, since, limit)
        if answer is not None:  # the running daemon's (docs/decisions/0065)
            remote.print_events(answer, fmt)
            return
    from the_loop import events as ev  # lazy: start-up

    flt = ev.parse_filter(list(type_), work_item, standing, level, since, limit)
    db = common.ctx().db
    rows = ev.query(db, flt)
    if fmt == "json" and not follow:
        common.print_json(rows)
        return
    if not rows and not follow and fmt == "table":
        common.print_empty("events match", "drop a filter, or watch new ones with --follow")
    for event in rows:
        _print_one(event, fmt)
    if follow:
        after = rows[-1].id if rows else ev.last_id(db)
        for event in ev.follow(db, flt.following(after)):
            _print_one(event, fmt)


def _print_one(event: ev.Event, fmt: str) -> None:
    from the_loop.wire import dumps  # lazy: start-up

    if fmt == "table":
        subject = event.work_item or (f"standing:{event.standing}" if event.standing else "-")
        print(event_line(event.ts, event.level, event.type, subject, event.payload))
    else:
        print(dumps(event, indent=None))
    sys.stdout.flush()


def _print_catalogue(fmt: str) -> None:
    from the_loop import events as ev  # lazy: start-up
    from the_loop.wire import dumps

    types = ev.catalogue()
    if fmt == "table":
        width = max(len(t.type) for t in types)
        for t in types:
            print(f"{t.type:<{width}}  {t.level:<7}  {t.description}")
        return
    if fmt == "json":
        common.print_json(types)
    else:
        for t in types:
            print(dumps(t, indent=None))
