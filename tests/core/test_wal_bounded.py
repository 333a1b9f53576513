"""The WAL starts over after the daemon's checkpoints even while commits keep coming: under a
steady stream of writes a PASSIVE checkpoint is never complete when the next writer begins,
and SQLite would append every commit to the WAL for as long as the stream lasts."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from the_loop.store import open_database

BLOB = os.urandom(8192)
COMMITS = 1500


def test_the_wal_stays_small_under_a_steady_stream_of_commits(tmp_path: Path) -> None:
    db = open_database(tmp_path)
    db.defer_checkpoints()
    with db.transaction() as tx:
        tx.execute("CREATE TABLE scratch (id INTEGER PRIMARY KEY, body BLOB)")
    done = threading.Event()
    checkpoints = 0

    def checkpointer() -> None:
        nonlocal checkpoints
        while not done.is_set():
            db.checkpoint()
            checkpoints += 1

    thread = threading.Thread(target=checkpointer)
    thread.start()
    wal = tmp_path / "the-loop.db-wal"
    sizes = []
    try:
        for n in range(COMMITS):
            with db.transaction() as tx:
                tx.execute("INSERT INTO scratch (body) VALUES (?)", (BLOB,))
            if n in (COMMITS // 2, COMMITS - 1):
                sizes.append(wal.stat().st_size)
    finally:
        done.set()
        thread.join()
    assert checkpoints > 10
    # the file keeps its largest size; once the WAL starts over it stops growing, while a WAL
    # that appends every commit grows by everything written in the second half
    second_half = COMMITS // 2 * len(BLOB)
    assert sizes[1] - sizes[0] < second_half / 4, (sizes, second_half, checkpoints)
