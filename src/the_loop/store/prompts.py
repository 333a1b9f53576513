"""The prompt queue of every agent session (work item or standing), keyed by the agent's key.

A prompt is ``pending`` when queued, ``staged`` once it sits in a tmux buffer waiting to be
pasted (a crash may have hit between the paste and the record), ``delivered`` once the agent has
it, ``resent`` when it was delivered but the turn that took it failed before the agent's model
saw it (a copy is queued again: ``resend``), and ``dropped`` when its agent stopped before it
could be delivered. A delivery id is queued at most once per agent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum

from the_loop.store.conn import Connection


class PromptStatus(StrEnum):
    pending = "pending"
    staged = "staged"
    delivered = "delivered"
    resent = "resent"
    dropped = "dropped"


@dataclass(frozen=True, slots=True)
class QueuedPrompt:
    """One prompt not yet delivered."""

    seq: int
    text: str
    delivery_id: str | None
    status: PromptStatus


def add(tx: Connection, agent: str, prompt: str, delivery_id: str | None) -> int | None:
    """Queue PROMPT for AGENT; its sequence number, or None when DELIVERY_ID was already queued
    for AGENT."""
    row = tx.execute(
        "INSERT INTO agent_prompts (agent, delivery_id, prompt, status, created_at)"
        " VALUES (?, ?, ?, 'pending', ?) ON CONFLICT DO NOTHING RETURNING seq",
        (agent, delivery_id, prompt, time.time()),
    ).fetchone()
    return None if row is None else int(row[0])


def pending(conn: Connection, agent: str) -> list[QueuedPrompt]:
    """AGENT's prompts not yet delivered (``pending`` or ``staged``), oldest first."""
    rows = conn.execute(
        "SELECT seq, prompt, delivery_id, status FROM agent_prompts"
        " WHERE agent = ? AND status IN ('pending', 'staged') ORDER BY seq",
        (agent,),
    )
    return [QueuedPrompt(int(r[0]), str(r[1]), r[2], PromptStatus(r[3])) for r in rows]


def waiting(conn: Connection, agent: str) -> tuple[int, str | None]:
    """How many of AGENT's prompts are not yet delivered, and what the oldest of them was last
    found held behind (``note_held``; None when it was not)."""
    rows = conn.execute(
        "SELECT held FROM agent_prompts"
        " WHERE agent = ? AND status IN ('pending', 'staged') ORDER BY seq",
        (agent,),
    ).fetchall()
    return len(rows), (rows[0][0] if rows else None)


def mark(tx: Connection, seq: int, status: PromptStatus | str) -> None:
    tx.execute(
        "UPDATE agent_prompts SET status = ?, delivered_at = ? WHERE seq = ?",
        (str(status), time.time(), seq),
    )


def note_held(tx: Connection, seq: int, why: str) -> bool:
    """Record that the prompt SEQ waits for WHY, from now; False when that was recorded
    already (its wait was reported: each process and node that looks again finds it)."""
    cur = tx.execute(
        "UPDATE agent_prompts SET held = ?, held_at = ?, noticed_at = NULL"
        " WHERE seq = ? AND (held IS NULL OR held <> ?)",
        (why, time.time(), seq, why),
    )
    return cur.rowcount == 1


def waits_due(conn: Connection, why: str, before: float) -> list[tuple[int, str]]:
    """The prompts (seq, agent) still queued that have waited for WHY since BEFORE or
    earlier, their wait not yet told (``mark_told``), oldest first."""
    rows = conn.execute(
        "SELECT seq, agent FROM agent_prompts WHERE status IN ('pending', 'staged')"
        " AND held = ? AND held_at <= ? AND noticed_at IS NULL ORDER BY seq",
        (why, before),
    )
    return [(int(r[0]), str(r[1])) for r in rows]


def mark_told(tx: Connection, seq: int, now: float) -> bool:
    """Record that the wait of prompt SEQ was told; False when it was already."""
    cur = tx.execute(
        "UPDATE agent_prompts SET noticed_at = ? WHERE seq = ? AND noticed_at IS NULL",
        (now, seq),
    )
    return cur.rowcount == 1


def delivered_count(conn: Connection, agent: str) -> int:
    row = conn.execute(
        "SELECT COUNT(*) FROM agent_prompts WHERE agent = ? AND status IN ('delivered', 'resent')",
        (agent,),
    ).fetchone()
    return int(row[0])


def last_delivered(conn: Connection, agent: str) -> float:
    """When AGENT was last delivered a prompt (seconds since the epoch; 0.0 when never)."""
    row = conn.execute(
        "SELECT MAX(delivered_at) FROM agent_prompts"
        " WHERE agent = ? AND status IN ('delivered', 'resent')",
        (agent,),
    ).fetchone()
    return float(row[0]) if row is not None and row[0] is not None else 0.0


def last_text(conn: Connection, agent: str) -> str | None:
    """The text of the prompt AGENT was delivered last; None when it was delivered none."""
    row = conn.execute(
        "SELECT prompt FROM agent_prompts WHERE agent = ? AND status IN ('delivered', 'resent')"
        " ORDER BY seq DESC LIMIT 1",
        (agent,),
    ).fetchone()
    return None if row is None else str(row[0])


def delivered_total(conn: Connection) -> int:
    """Prompts delivered to any agent (for metrics)."""
    row = conn.execute(
        "SELECT COUNT(*) FROM agent_prompts WHERE status IN ('delivered', 'resent')"
    ).fetchone()
    return int(row[0])


def requeue_staged(tx: Connection, agent: str, note: str = "") -> int:
    """Make AGENT's ``staged`` prompts ``pending`` again (its agent moved to another node,
    whose tmux has none of the old one's buffers: the prompt in flight is delivered again),
    each with NOTE in front of its text."""
    cur = tx.execute(
        "UPDATE agent_prompts SET status = 'pending', prompt = ? || prompt"
        " WHERE agent = ? AND status = 'staged'",
        (note, agent),
    )
    return max(cur.rowcount, 0)


def resend(tx: Connection, agent: str, since: float | None, note: str) -> int:
    """Queue again, in their order and after what AGENT has queued, the prompts delivered to it
    after SINCE (all of them when None): the turn that took them failed before its model saw
    them. Each copy has NOTE in front of its text (once: a copy resent again keeps one) and no
    delivery id (the original keeps it, so the delivery is still queued only once); the
    originals become ``resent``. Returns how many were queued again."""
    rows = tx.execute(
        "SELECT seq, prompt FROM agent_prompts WHERE agent = ? AND status = 'delivered'"
        " AND delivered_at > ? ORDER BY seq",
        (agent, 0.0 if since is None else since),
    ).fetchall()
    for seq, prompt in rows:
        text = str(prompt)
        add(tx, agent, text if text.startswith(note) else note + text, None)
        mark(tx, int(seq), PromptStatus.resent)
    return len(rows)


def carry(tx: Connection, work_item: str, to_agent: str) -> int:
    """Queue for TO_AGENT, after what it has, the prompts the earlier sessions of WORK_ITEM
    kept undelivered (held over budget, or waiting for a wake), oldest first; theirs become
    ``dropped``. Returns how many were carried."""
    rows = tx.execute(
        "SELECT seq, prompt, delivery_id FROM agent_prompts WHERE status = 'pending' AND agent IN"
        " (SELECT id FROM sessions WHERE work_item = ? AND id <> ? AND status = 'closed')"
        " ORDER BY seq",
        (work_item, to_agent),
    ).fetchall()
    for seq, prompt, delivery_id in rows:
        add(tx, to_agent, str(prompt), delivery_id)
        mark(tx, int(seq), PromptStatus.dropped)
    return len(rows)


def agents_with_pending(conn: Connection) -> list[str]:
    """The agents that have prompts not yet delivered, in the order their oldest was queued."""
    rows = conn.execute(
        "SELECT agent, MIN(seq) FROM agent_prompts WHERE status IN ('pending', 'staged')"
        " GROUP BY agent ORDER BY MIN(seq)"
    )
    return [str(r[0]) for r in rows]
