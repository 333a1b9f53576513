"""The intake journal: the acceptances of the SQLite inbox, on stable storage in one small sync.

A power-loss-durable acknowledgement used to be a fully-synced commit of the database's WAL,
and that ``fdatasync`` flushed every page written since the last one: the acceptance's nine
pages and the thirteen or so the inbox worker had written meanwhile (``bench/analysis.md``,
item 13). The journal is a file of its own beside the database (``intake.journal``), written
with zeros to its full size when made, so that appending a record and syncing it flushes only
the record's own pages and never the file's size (decision 0037).

The group-commit writer (``store.intake_writer``) appends each batch's records and syncs them,
then commits the batch to the inbox with the database's ordinary durability, and only then
acknowledges: a 202 still means that the delivery is in the inbox, and also that it survives
a power loss, through the journal until the database's own files are synced. When the journal
is past ``REWIND_BYTES``, or the writer is idle, the writer syncs the database's files and
starts the journal over (``rewind``). On start, whatever the journal holds is committed to the
inbox again (``records``): a delivery already there is a duplicate and changes nothing.

A record is a 24-byte head (magic, CRC-32, sequence number, length) and its payload. The
records read back are those from offset 0 whose heads and CRCs are whole and whose sequence
numbers follow each other: a record torn by a crash ends the chain, and so does an older record
left past the end by an earlier pass (its number does not follow). A rewind zeroes the first
head (synced) before anything is written again.

Only one journal user per file: ``open_journal`` takes an exclusive ``flock`` and answers None
when another holder has it (the caller then commits fully synced, as before).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import struct
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from the_loop.store.conn import Connection
from the_loop.store.events import NewEvent

JOURNAL_NAME = "intake.journal"
SIZE = 16 * 1024 * 1024
"""The journal's size (written at creation): a batch that does not fit is committed directly."""
REWIND_BYTES = 4 * 1024 * 1024
"""Past this offset the writer syncs the database's files and starts the journal over."""
_MAGIC = b"TLJ1"
_HEAD = struct.Struct("<4sIQI4x")
_ZEROS = b"\0" * (1024 * 1024)


@dataclass(frozen=True, slots=True)
class Record:
    """One journaled acceptance: the inbox row's fields and the event that records it."""

    delivery_id: str
    event: str
    source: str
    payload: bytes
    work: str | None
    lane: str | None
    received: NewEvent | None

    def encode(self) -> bytes:
        ev = self.received
        meta = [
            self.delivery_id,
            self.event,
            self.source,
            self.work,
            self.lane,
            None
            if ev is None
            else [
                ev.ts,
                ev.type,
                ev.level,
                ev.source,
                ev.work_item,
                ev.standing,
                ev.session_id,
                ev.delivery_id,
                ev.payload_json,
            ],
        ]
        head = json.dumps(meta, separators=(",", ":")).encode()
        return struct.pack("<I", len(head)) + head + self.payload

    @classmethod
    def decode(cls, data: bytes) -> Record:
        (size,) = struct.unpack_from("<I", data)
        meta = json.loads(data[4 : 4 + size])
        ev = meta[5]
        received = None if ev is None else NewEvent(*ev)
        return cls(meta[0], meta[1], meta[2], bytes(data[4 + size :]), meta[3], meta[4], received)


class Journal:
    """An open intake journal (see the module docstring); one thread uses it."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.offset = 0
        self.seq = time.time_ns()
        self.syncs = 0

    def records(self) -> list[Record]:
        """The records the journal holds (a crash left them; see the module docstring)."""
        found: list[Record] = []
        offset, expected = 0, None
        while offset + _HEAD.size <= SIZE:
            head = os.pread(self.fd, _HEAD.size, offset)
            if len(head) < _HEAD.size:
                break
            magic, crc, seq, length = _HEAD.unpack(head)
            if magic != _MAGIC or (expected is not None and seq != expected):
                break
            end = offset + _HEAD.size + length
            if end > SIZE:
                break
            body = os.pread(self.fd, length, offset + _HEAD.size)
            if len(body) < length or zlib.crc32(body, seq & 0xFFFFFFFF) != crc:
                break
            try:
                found.append(Record.decode(body))
            except (ValueError, TypeError, IndexError, struct.error):
                break
            offset, expected = end, seq + 1
        return found

    def fits(self, records: list[bytes]) -> bool:
        need = sum(_HEAD.size + len(r) for r in records)
        return self.offset + need <= SIZE

    def append(self, records: list[bytes]) -> None:
        """Write RECORDS after the last one and sync them (the caller checked ``fits``)."""
        parts: list[bytes] = []
        for data in records:
            self.seq += 1
            crc = zlib.crc32(data, self.seq & 0xFFFFFFFF)
            parts.append(_HEAD.pack(_MAGIC, crc, self.seq, len(data)))
            parts.append(data)
        blob = b"".join(parts)
        os.pwrite(self.fd, blob, self.offset)
        os.fdatasync(self.fd)
        self.offset += len(blob)
        self.syncs += 1

    def rewind(self) -> None:
        """Start over: zero the first head, synced (the caller made every commit durable
        first, ``mark_rewound``)."""
        os.pwrite(self.fd, bytes(_HEAD.size), 0)
        os.fdatasync(self.fd)
        self.offset = 0

    def close(self) -> None:
        os.close(self.fd)  # the flock goes with it


def mark_rewound(tx: Connection, now: float) -> None:
    """Record in TX that the journal starts over. Committed with ``synchronous = FULL``, this
    write syncs the WAL, and with it every commit before it, whichever connection made it (a
    frame leaves the WAL only for the database file, synced by the checkpoint that copied it).
    The database's files are never opened beside SQLite: closing such a descriptor would drop
    the process's POSIX locks on them."""
    tx.execute("UPDATE intake_journal SET rewound_at = ? WHERE id = 1", (now,))


def open_journal(state_dir: Path) -> Journal | None:
    """The journal of the database in STATE_DIR, made (written to its full size, synced) when
    missing; None when another holder has it, or it cannot be made (a full disk)."""
    path = state_dir / JOURNAL_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    try:
        if os.fstat(fd).st_size < SIZE:
            _fill(fd, state_dir)
    except OSError:  # a full disk: give the space back, commit fully synced instead
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
        os.close(fd)
        return None
    return Journal(path, fd)


def _fill(fd: int, state_dir: Path) -> None:
    """Write zeros up to SIZE (blocks written, so that appends never change the file's
    metadata), sync the file and its directory entry."""
    offset = os.fstat(fd).st_size
    while offset < SIZE:
        chunk = _ZEROS[: SIZE - offset]
        offset += os.pwrite(fd, chunk, offset)
    os.fsync(fd)
    folder = os.open(state_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
