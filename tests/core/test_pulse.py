"""What wakes a background pass (``the_loop.pulse``, decision 0066): a write of another process
to the SQLite file counts as a change; a commit of this process that wakes no pass (a node's
heartbeat) never does, even when the pass looks while that commit's WAL frames are written
and its own stamp is not yet recorded; nor does such a commit hide another process's write
that came just before it."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from pathlib import Path

from the_loop import events as ev
from the_loop.pulse import OUTSIDE_SECONDS, Pulse
from the_loop.store import events as event_store
from the_loop.store import open_database
from the_loop.store.db import DB_NAME

ONE_LOOK = OUTSIDE_SECONDS * 1.5
"""Long enough for a waiting pulse to look once at the WAL."""


def written_by_another_process(state_dir: Path) -> None:
    """A write to the database file by another process (its own connection)."""
    other = sqlite3.connect(state_dir / DB_NAME)
    try:
        with other:
            other.execute("UPDATE events SET source = 'other' WHERE id = 1")
    finally:
        other.close()


def test_a_commit_of_this_process_is_never_taken_for_another_processs_write(
    tmp_path: Path,
) -> None:
    db = open_database(tmp_path)
    wal = Path(f"{tmp_path / DB_NAME}-wal")
    written, looked = threading.Event(), threading.Event()

    def heartbeat_like() -> None:
        """An unnoticed commit caught between writing the WAL and recording its stamp."""
        with db.unnoticed(), db.transaction() as tx:
            event_store.insert(tx, ev.build("webhook.received", source="test"))
            os.utime(wal)  # the WAL moves before the commit returns
            written.set()
            assert looked.wait(30)

    async def scenario() -> tuple[bool, bool]:
        pulse = Pulse(db)
        stop = asyncio.Event()
        try:
            writer = threading.Thread(target=heartbeat_like)
            writer.start()
            assert await asyncio.to_thread(written.wait, 30)
            began = pulse.begin()
            await pulse.wait(stop, began, began + ONE_LOOK, 0.0)
            during = pulse.changed.is_set()
            looked.set()
            await asyncio.to_thread(writer.join, 30)
            began = pulse.begin()
            await pulse.wait(stop, began, began + ONE_LOOK, 0.0)
            own = during or pulse.changed.is_set()

            written_by_another_process(tmp_path)
            began = pulse.begin()
            await pulse.wait(stop, began, began + ONE_LOOK, 0.0)
            return own, pulse.changed.is_set()
        finally:
            pulse.close()

    try:
        own, outside = asyncio.run(scenario())
    finally:
        db.close()
    assert not own, "a commit of this process was taken for another process's write"
    assert outside, "another process's write was not seen"


def test_another_processs_write_just_before_a_heartbeat_is_still_seen(tmp_path: Path) -> None:
    """A person's `the-loop allow` (another process) committed, then, before the pass looked,
    the node's heartbeat (an unnoticed commit of the daemon): the heartbeat's stamp covers the
    answer's write too. Unseen, the waiting permission hook got its answer only at the safety
    pass, 30 s later, and the CLI said the agent had not taken it."""
    db = open_database(tmp_path)
    with db.transaction() as tx:
        event_store.insert(tx, ev.build("webhook.received", source="test"))

    async def scenario() -> bool:
        pulse = Pulse(db)
        stop = asyncio.Event()
        try:
            began = pulse.begin()
            written_by_another_process(tmp_path)

            def heartbeat() -> None:
                with db.unnoticed(), db.transaction() as tx:
                    event_store.insert(tx, ev.build("webhook.received", source="beat"))

            await asyncio.to_thread(heartbeat)
            await pulse.wait(stop, began, began + ONE_LOOK, 0.0)
            return pulse.changed.is_set()
        finally:
            pulse.close()

    try:
        seen = asyncio.run(scenario())
    finally:
        db.close()
    assert seen, "another process's write was hidden by a heartbeat that followed it"
