"""The intake journal's file (``store.intake_journal``) and the writer that uses it, on real
files and a real SQLite database: records come back after a crash in order, a torn record
ends the chain, a rewind forgets everything before it, one holder at a time, and a batch too
large for the journal is committed fully synced instead."""

from __future__ import annotations

import os
from pathlib import Path

from the_loop.store import events, inbox, open_database
from the_loop.store.events import NewEvent
from the_loop.store.intake_journal import SIZE, Journal, Record, open_journal
from the_loop.store.intake_writer import IntakeWriter
from the_loop.store.rows import EventFilter


def _record(n: int, body: bytes = b"{}") -> Record:
    event = NewEvent(1.5, "webhook.received", 20, "webhook", None, None, None, f"d-{n}", "{}")
    return Record(f"d-{n}", "issue_comment", "webhook", body, '{"w":1}', f"lane-{n}", event)


def _open(tmp_path: Path) -> Journal:
    journal = open_journal(tmp_path)
    assert journal is not None
    return journal


def test_records_come_back_after_a_crash_in_order_with_their_events(tmp_path: Path) -> None:
    journal = _open(tmp_path)
    assert journal.records() == []
    assert os.path.getsize(journal.path) == SIZE  # written whole when made
    written = [_record(n, os.urandom(n * 100)) for n in range(1, 6)]
    journal.append([r.encode() for r in written[:2]])
    journal.append([r.encode() for r in written[2:]])
    journal.close()  # a crash: nothing rewound
    again = _open(tmp_path)
    assert again.records() == written


def test_a_torn_record_ends_the_chain(tmp_path: Path) -> None:
    journal = _open(tmp_path)
    written = [_record(n, b"x" * 500) for n in range(3)]
    journal.append([r.encode() for r in written])
    end = journal.offset
    os.pwrite(journal.fd, b"\xff", end - 10)  # the last record's payload, half written
    assert journal.records() == written[:2]


def test_a_rewind_forgets_every_earlier_record(tmp_path: Path) -> None:
    journal = _open(tmp_path)
    journal.append([_record(n, b"y" * 300).encode() for n in range(4)])
    journal.rewind()
    assert journal.records() == []
    fresh = _record(9)
    journal.append([fresh.encode()])  # shorter: the older records lie past its end
    assert journal.records() == [fresh]
    journal.close()
    assert _open(tmp_path).records() == [fresh]


def test_one_holder_at_a_time(tmp_path: Path) -> None:
    first = _open(tmp_path)
    assert open_journal(tmp_path) is None
    first.close()
    assert open_journal(tmp_path) is not None


def test_the_writer_journals_commits_and_starts_over(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    writer = IntakeWriter(db, idle_seconds=5)
    futures = [
        writer.submit(inbox.Acceptance(f"w-{n}", "push", b"{}", "webhook")) for n in range(20)
    ]
    results = [f.result(timeout=30) for f in futures]
    assert [r.duplicate for r in results] == [False] * 20
    assert {i.delivery_id for i in inbox.list_items(db)} == {f"w-{n}" for n in range(20)}
    assert writer.figures.journaled == 20
    dup = writer.submit(inbox.Acceptance("w-3", "push", b"{}", "webhook")).result(timeout=30)
    assert dup.duplicate is True
    big = b"z" * (SIZE + 1)  # larger than the journal: committed fully synced
    assert not writer.submit(inbox.Acceptance("big", "push", big, "webhook")).result(30).duplicate
    assert writer.figures.journaled == 21
    writer.close()
    journal = _open(tmp_path)  # released, and emptied when the writer stopped
    assert journal.records() == []
    journal.close()
    assert len(inbox.list_items(db)) == 21


def test_the_writer_commits_what_a_crash_left_in_the_journal(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    left = _open(tmp_path)
    left.append([_record(n).encode() for n in range(3)])
    left.close()
    inbox.accept(db, "d-1", "issue_comment", b"{}", "webhook")  # committed before the crash
    writer = IntakeWriter(db, idle_seconds=5)
    writer.start()
    assert writer.figures.recovered == 3
    assert sorted(i.delivery_id for i in inbox.list_items(db)) == ["d-0", "d-1", "d-2"]
    found = events.newest(db, EventFilter(types=("webhook.received",), limit=None))
    got = [e.delivery_id for e in found]
    assert sorted(got) == ["d-0", "d-2"]  # the one already committed records nothing again
    writer.close()
    assert _open(tmp_path).records() == []
