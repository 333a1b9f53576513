"""The ``transcripts`` and ``transcript_chunks`` tables: each harness conversation's transcript
(Claude Code's ``<id>.jsonl``), kept so that another node can resume the conversation.

A transcript is stored incrementally: each finished turn appends one chunk holding the bytes
the file grew by (whole lines only), keyed by the conversation and the chunk's byte offset in
the file. ``transcripts.bytes`` is where the next chunk starts; a chunk offered at another
offset (written already, or by a concurrent writer) changes nothing, so writing one twice is
harmless. A conversation that would grow past its cap (``MAX_BYTES``) is marked ``over_cap``,
its chunks are dropped and a ``session.transcript_over_cap`` event says so: an incomplete
transcript is never handed out for a resume.
"""

from __future__ import annotations

from the_loop.store import attention

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook imports this module: no typing at run time
    from typing import Any

    from the_loop.store.conn import Connection

MAX_BYTES = 64 << 20
"""A conversation's cap: a transcript larger than this (64 MiB) is not kept."""
_WARNING = 30

STORED = "stored"
SKIPPED = "skipped"
OVER_CAP = "over-cap"


class Stored:
    """What is kept of one conversation: BYTES of its file (the next chunk's offset)."""

    __slots__ = ("agent", "bytes", "conversation", "over_cap", "updated_at")

    def __init__(self, row: tuple[Any, ...]) -> None:
        self.conversation, self.agent, self.bytes, over_cap, self.updated_at = row
        self.over_cap = bool(over_cap)

    def __repr__(self) -> str:
        return f"Stored({self.conversation!r}, {self.agent!r}, {self.bytes}, {self.over_cap})"


def get(conn: Connection, conversation: str) -> Stored | None:
    """What is kept of CONVERSATION; None when nothing is."""
    row = conn.execute(
        "SELECT conversation, agent, bytes, over_cap, updated_at FROM transcripts"
        " WHERE conversation = ?",
        (conversation,),
    ).fetchone()
    return None if row is None else Stored(row)


def append(
    tx: Connection,
    conversation: str,
    agent: str,
    start: int,
    data: bytes,
    *,
    now: float,
    cap: int = MAX_BYTES,
    seen: int = 0,
    work_item: str | None = None,
    standing: str | None = None,
) -> str:
    """In transaction TX, store DATA (whole lines of UTF-8) as the bytes of CONVERSATION's
    file from offset START on (SEEN: the file's size, when known). ``STORED``; ``SKIPPED``
    when START is not where the stored transcript ends (the chunk is there already, or the
    file is not the one stored); ``OVER_CAP`` when the transcript is, or now becomes, larger
    than CAP (the event is written once, when it becomes so). Raises ``ValueError`` when DATA
    is not UTF-8."""
    text = data.decode("utf-8")
    found = get(tx, conversation)
    end = 0 if found is None else found.bytes
    if found is not None and found.over_cap:
        return OVER_CAP
    if start != end:
        return SKIPPED
    total = max(end + len(data), seen)
    if total > cap:
        _over_cap(tx, conversation, agent, total, cap, now, (work_item, standing))
        return OVER_CAP
    if not data:
        return SKIPPED
    total = end + len(data)
    tx.execute(
        "INSERT INTO transcript_chunks (conversation, start, size, data) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (conversation, start) DO NOTHING",
        (conversation, start, len(data), text),
    )
    _header(tx, conversation, agent, total, False, now)
    return STORED


def _header(
    tx: Connection, conversation: str, agent: str, size: int, over_cap: bool, now: float
) -> None:
    tx.execute(
        "INSERT INTO transcripts (conversation, agent, bytes, over_cap, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation) DO UPDATE SET agent = excluded.agent,"
        " bytes = excluded.bytes, over_cap = excluded.over_cap, updated_at = excluded.updated_at",
        (conversation, agent, size, 1 if over_cap else 0, now),
    )


def _over_cap(
    tx: Connection,
    conversation: str,
    agent: str,
    size: int,
    cap: int,
    now: float,
    where: tuple[str | None, str | None],
) -> None:
    tx.execute("DELETE FROM transcript_chunks WHERE conversation = ?", (conversation,))
    _header(tx, conversation, agent, size, True, now)
    attention.append_event(
        tx,
        now,
        "session.transcript_over_cap",
        _WARNING,
        "hook",
        where[0],
        where[1],
        agent if where[0] else None,
        {"conversation": conversation, "bytes": size, "capBytes": cap},
    )


def load(conn: Connection, conversation: str) -> bytes | None:
    """CONVERSATION's stored transcript, whole; None when none is kept, it went over its cap,
    or its chunks do not join up."""
    found = get(conn, conversation)
    if found is None or found.over_cap or found.bytes <= 0:
        return None
    rows = conn.execute(
        "SELECT start, size, data FROM transcript_chunks WHERE conversation = ? ORDER BY start",
        (conversation,),
    ).fetchall()
    parts: list[bytes] = []
    at = 0
    for start, size, text in rows:
        if start != at:
            return None
        part = str(text).encode("utf-8")
        if len(part) != size:
            return None
        parts.append(part)
        at += size
    return b"".join(parts) if at == found.bytes else None


def prune_closed(tx: Connection) -> int:
    """Drop the transcripts nothing resumes any more, and say how many: those of work-item
    sessions that are closed, and those of standing sessions that were deleted (no
    ``standing`` row of that name). A standing session that exists keeps its transcripts."""
    rows = tx.execute(
        "SELECT t.conversation FROM transcripts t JOIN sessions s ON s.id = t.agent"
        " WHERE s.status = 'closed'"
    ).fetchall()
    rows += tx.execute(
        "SELECT t.conversation FROM transcripts t WHERE t.agent LIKE 'standing:%'"
        " AND NOT EXISTS (SELECT 1 FROM standing s WHERE 'standing:' || s.name = t.agent)"
    ).fetchall()
    for (conversation,) in rows:
        tx.execute("DELETE FROM transcript_chunks WHERE conversation = ?", (conversation,))
        tx.execute("DELETE FROM transcripts WHERE conversation = ?", (conversation,))
    return len(rows)
