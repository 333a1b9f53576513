"""The ``slack_threads`` and ``slack_prompts`` tables: which Slack thread belongs to what.

A thread is bound to a key: ``standing:NAME`` for a standing session, the work item ref for a
work item. The binding is written (without a thread) in the transaction that queues the
announcement, so a key is announced once; the thread's ``ts`` is filled in when the
announcement was posted. ``slack_prompts`` records each attention prompt posted into a thread
(once per prompt), the ``ts`` of that message once posted, and when its update (who answered
and how) was queued. ``attention_turns`` (written by ``store.attention`` when an agent with a
bound thread finishes a turn) holds each finished turn until its posts are queued.
"""

from __future__ import annotations

from typing import NamedTuple

from the_loop.store.conn import Connection
from the_loop.store.db import Database


class Thread(NamedTuple):
    key: str
    channel: str
    thread_ts: str | None


class PostedPrompt(NamedTuple):
    prompt_id: str
    thread_key: str
    channel: str
    ts: str | None


class Turn(NamedTuple):
    """A finished turn still to be told in its thread: its id, agent, thread key, message."""

    id: int
    agent: str
    thread_key: str
    message: str


class DuePrompt(NamedTuple):
    """An attention prompt to post (read whole with ``store.attention.get_prompt``): its id
    and the key of its thread."""

    prompt_id: str
    thread_key: str


def reserve(tx: Connection, key: str, channel: str, now: float) -> bool:
    """Bind KEY to a thread in CHANNEL still to be posted; False when KEY has one already."""
    cur = tx.execute(
        "INSERT INTO slack_threads (key, channel, thread_ts, created_at) VALUES (?, ?, NULL, ?)"
        " ON CONFLICT (key) DO NOTHING",
        (key, channel, now),
    )
    return cur.rowcount == 1


def set_thread(db: Database, key: str, channel: str, thread_ts: str, now: float) -> None:
    """Record that KEY's announcement was posted as THREAD_TS in CHANNEL."""
    with db.transaction() as tx:
        tx.execute(
            "UPDATE slack_threads SET channel = ?, thread_ts = ?, bound_at = ? WHERE key = ?",
            (channel, thread_ts, now, key),
        )


def thread_of(conn: Connection, key: str) -> Thread | None:
    row = conn.execute(
        "SELECT key, channel, thread_ts FROM slack_threads WHERE key = ?", (key,)
    ).fetchone()
    return None if row is None else Thread(*row)


def key_of(conn: Connection, channel: str, thread_ts: str) -> str | None:
    """The key the thread THREAD_TS of CHANNEL is bound to, None when it is bound to nothing."""
    row = conn.execute(
        "SELECT key FROM slack_threads WHERE channel = ? AND thread_ts = ?", (channel, thread_ts)
    ).fetchone()
    return None if row is None else str(row[0])


def add_prompt(tx: Connection, prompt_id: str, key: str, channel: str, now: float) -> bool:
    """Record that PROMPT_ID is posted into KEY's thread; False when it was already."""
    cur = tx.execute(
        "INSERT INTO slack_prompts (prompt_id, thread_key, channel, ts, queued_at)"
        " VALUES (?, ?, ?, NULL, ?) ON CONFLICT (prompt_id) DO NOTHING",
        (prompt_id, key, channel, now),
    )
    return cur.rowcount == 1


def set_prompt_ts(db: Database, prompt_id: str, ts: str) -> None:
    with db.transaction() as tx:
        tx.execute("UPDATE slack_prompts SET ts = ? WHERE prompt_id = ?", (ts, prompt_id))


def posted_prompt(conn: Connection, prompt_id: str) -> PostedPrompt | None:
    row = conn.execute(
        "SELECT prompt_id, thread_key, channel, ts FROM slack_prompts WHERE prompt_id = ?",
        (prompt_id,),
    ).fetchone()
    return None if row is None else PostedPrompt(*row)


_UNPOSTED_PROMPTS = (
    " FROM attention_prompts p JOIN attention a ON a.agent = p.agent"
    " JOIN slack_threads t ON t.key = (CASE WHEN a.agent LIKE 'standing:%' THEN a.agent"
    " ELSE a.work_item END)"
    " WHERE p.decision IS NULL AND p.closed_at IS NULL"
    " AND NOT EXISTS (SELECT 1 FROM slack_prompts s WHERE s.prompt_id = p.id)"
)
"""Pending prompts not yet posted whose agent's thread (the standing session's, else the work
item's) is bound."""


def due_prompts(conn: Connection, before: float) -> list[DuePrompt]:
    """Pending prompts opened at BEFORE or earlier, not yet posted, whose agent's thread
    (the standing session's, else the work item's) is bound."""
    cur = conn.execute(
        "SELECT p.id, t.key" + _UNPOSTED_PROMPTS + " AND p.created_at <= ? ORDER BY p.created_at",
        (before,),
    )
    return [DuePrompt(*r) for r in cur.fetchall()]


def first_unposted_prompt(conn: Connection) -> float | None:
    """When the oldest prompt that ``due_prompts`` will return opened (None: there is none)."""
    row = conn.execute("SELECT MIN(p.created_at)" + _UNPOSTED_PROMPTS).fetchone()
    return None if row is None or row[0] is None else float(row[0])


def due_updates(conn: Connection) -> list[str]:
    """Posted prompts that closed since, whose update is not queued yet (an answer recorded is
    told once its prompt closes: the agent took it, or its dialog went otherwise)."""
    cur = conn.execute(
        "SELECT s.prompt_id FROM slack_prompts s JOIN attention_prompts p ON p.id = s.prompt_id"
        " WHERE s.update_queued_at IS NULL AND p.closed_at IS NOT NULL"
        " ORDER BY s.queued_at"
    )
    return [str(r[0]) for r in cur.fetchall()]


def mark_update(tx: Connection, prompt_id: str, now: float) -> bool:
    """Record that PROMPT_ID's update was queued; False when it was already."""
    cur = tx.execute(
        "UPDATE slack_prompts SET update_queued_at = ? WHERE prompt_id = ?"
        " AND update_queued_at IS NULL",
        (now, prompt_id),
    )
    return cur.rowcount == 1


def due_turns(conn: Connection, limit: int = 50) -> list[Turn]:
    """Finished turns not yet told, oldest first."""
    cur = conn.execute(
        "SELECT id, agent, thread_key, message FROM attention_turns ORDER BY id LIMIT ?",
        (limit,),
    )
    return [Turn(int(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in cur.fetchall()]


def take_turn(tx: Connection, turn_id: int) -> bool:
    """Remove TURN_ID in TX (its posts are queued in TX, or it is dropped); False when it was
    taken already."""
    return tx.execute("DELETE FROM attention_turns WHERE id = ?", (turn_id,)).rowcount == 1


def drop_turns(db: Database) -> int:
    """Forget every finished turn not told yet (Slack is off); how many."""
    if db.connect().execute("SELECT 1 FROM attention_turns LIMIT 1").fetchone() is None:
        return 0
    with db.transaction() as tx:
        return int(tx.execute("DELETE FROM attention_turns").rowcount)
