"""Transcripts in the store: appended chunk by chunk at their byte offsets, a chunk written
twice kept once, a transcript over its cap dropped with one event, read back whole, those of
closed sessions pruned; on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import BACKENDS
from the_loop import events as ev
from the_loop.store import Database, open_database, sessions, standing
from the_loop.store import transcripts as store
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.store.standing import StandingRecord

CONV = "2f0c6c5e-7d51-4d7e-9a57-2f2f0e6f4a10"
AGENT = "s-1"


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db(tmp_path: Path, db_url: str | None) -> Database:
    return open_database(tmp_path / "state", db_url)


def _line(n: int, text: str = "") -> bytes:
    entry = {"type": "user", "n": n, "message": {"role": "user", "content": text or f"m{n}"}}
    return (json.dumps(entry, ensure_ascii=False) + "\n").encode()


def _append(db: Database, start: int, data: bytes, **kw: int) -> str:
    with db.transaction() as tx:
        return store.append(tx, CONV, AGENT, start, data, now=1.0, work_item="g:o/r#1", **kw)


def test_chunks_append_at_their_offsets_and_read_back_whole(db: Database) -> None:
    first = _line(1) + _line(2, "naïve, ünïcode ✓")
    second = _line(3)
    assert store.load(db.connect(), CONV) is None
    assert _append(db, 0, first) == store.STORED
    assert _append(db, len(first), second) == store.STORED
    kept = store.get(db.connect(), CONV)
    assert kept is not None and kept.bytes == len(first) + len(second) and not kept.over_cap
    assert kept.agent == AGENT
    assert store.load(db.connect(), CONV) == first + second


def test_a_chunk_written_twice_or_out_of_place_changes_nothing(db: Database) -> None:
    first, second = _line(1), _line(2)
    assert _append(db, 0, first) == store.STORED
    assert _append(db, 0, first) == store.SKIPPED  # the same turn's hook again
    assert _append(db, len(first), second) == store.STORED
    assert _append(db, len(first), second) == store.SKIPPED
    assert _append(db, 5, second) == store.SKIPPED  # not where the stored transcript ends
    assert _append(db, 10_000, second) == store.SKIPPED
    assert _append(db, len(first) + len(second), b"") == store.SKIPPED
    assert store.load(db.connect(), CONV) == first + second


def test_a_transcript_over_its_cap_is_dropped_with_one_event(db: Database) -> None:
    first = _line(1)
    assert _append(db, 0, first, cap=100) == store.STORED
    big = _line(2, "x" * 200)
    assert _append(db, len(first), big, cap=100) == store.OVER_CAP
    assert _append(db, len(first), _line(3), cap=100) == store.OVER_CAP  # stays so
    kept = store.get(db.connect(), CONV)
    assert kept is not None and kept.over_cap and kept.bytes == len(first) + len(big)
    assert store.load(db.connect(), CONV) is None  # never a partial transcript for a resume
    found = ev.query(db, ev.EventFilter(types=("session.transcript_over_cap",)))
    assert len(found) == 1
    assert found[0].payload == {
        "conversation": CONV,
        "bytes": len(first) + len(big),
        "capBytes": 100,
    }
    assert found[0].work_item == "g:o/r#1" and found[0].session_id == AGENT
    assert found[0].level == "warning"


def test_the_file_size_alone_can_put_it_over_the_cap(db: Database) -> None:
    assert _append(db, 0, b"", cap=100, seen=500) == store.OVER_CAP
    assert store.get(db.connect(), CONV).over_cap  # type: ignore[union-attr]


def test_not_utf8_is_refused_and_nothing_is_kept(db: Database) -> None:
    with pytest.raises(ValueError):
        _append(db, 0, b"\xff\xfe\n")
    assert store.get(db.connect(), CONV) is None


def test_the_transcripts_of_closed_and_deleted_sessions_are_pruned(db: Database) -> None:
    now = time.time()
    with db.transaction() as tx:
        for sid, status in (("s-open", SessionStatus.active), ("s-done", SessionStatus.closed)):
            sessions.insert(
                tx,
                SessionRecord(
                    id=sid,
                    work_item=f"github:o/r#{sid}",
                    harness="claude",
                    runner="tmux",
                    cwd="/tmp",
                    status=status,
                    created_at=now,
                    last_event_at=now,
                ),
            )
            store.append(tx, f"conv-{sid}", sid, 0, _line(1), now=now)
        store.append(tx, "conv-standing", "standing:triage", 0, _line(1), now=now)
        store.append(tx, "conv-deleted", "standing:gone", 0, _line(1), now=now)
        standing.insert(tx, StandingRecord(name="triage", source="created", created_at=now))
    with db.transaction() as tx:
        assert store.prune_closed(tx) == 2
    assert store.get(db.connect(), "conv-deleted") is None, "its standing session was deleted"
    assert store.load(db.connect(), "conv-s-done") is None
    assert store.get(db.connect(), "conv-s-done") is None
    assert store.load(db.connect(), "conv-s-open") == _line(1)
    assert store.load(db.connect(), "conv-standing") == _line(1)
