"""``the-loop events``: query, follow and list the event catalogue."""

from __future__ import annotations

import sys
from enum import StrEnum

import typer

from the_loop import events as ev
from the_loop.cli import common
from the_loop.cli.plain import event_line
from the_loop.wire import dumps


class EventFormat(StrEnum):
    table = "table"
    json = "json"
    jsonl = "jsonl"


def events(
    type_: list[str] = typer.Option([], "--type", "-t", help="Type glob, e.g. 'session.*'."),
    work_item: str | None = typer.Option(None, "--work-item", help="github:OWNER/REPO#N"),
    standing: str | None = typer.Option(None, "--standing", help="Standing session name."),
    level: str = typer.Option("debug", "--level", help="Minimum level."),
    since: str | None = typer.Option(None, "--since", help="30s, 15m, 2h, 1d or ISO time."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, max=100_000),
    fmt: EventFormat = typer.Option(EventFormat.table, "--format"),
    follow: bool = typer.Option(False, "--follow", "-f", help="Stream new events."),
    types: bool = typer.Option(False, "--types", help="Print the event catalogue."),
) -> None:
    """Show the event log: every decision the-loop made, newest last."""
    if types:
        _print_catalogue(fmt)
        return
    flt = ev.parse_filter(type_, work_item, standing, level, since, limit)
    db = common.ctx().db
    rows = ev.query(db, flt)
    if fmt is EventFormat.json and not follow:
        common.print_json(rows)
        return
    if not rows and not follow and fmt is EventFormat.table:
        common.print_empty("events match", "drop a filter, or watch new ones with --follow")
    for event in rows:
        _print_one(event, fmt)
    if follow:
        after = rows[-1].id if rows else ev.last_id(db)
        for event in ev.follow(db, flt.following(after)):
            _print_one(event, fmt)


def _print_one(event: ev.Event, fmt: EventFormat) -> None:
    if fmt is EventFormat.table:
        subject = event.work_item or (f"standing:{event.standing}" if event.standing else "-")
        print(event_line(event.ts, event.level, event.type, subject, event.payload))
    else:
        print(dumps(event, indent=None))
    sys.stdout.flush()


def _print_catalogue(fmt: EventFormat) -> None:
    types = ev.catalogue()
    if fmt is EventFormat.table:
        width = max(len(t.type) for t in types)
        for t in types:
            print(f"{t.type:<{width}}  {t.level:<7}  {t.description}")
        return
    if fmt is EventFormat.json:
        common.print_json(types)
    else:
        for t in types:
            print(dumps(t, indent=None))
