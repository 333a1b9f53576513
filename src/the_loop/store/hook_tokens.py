"""The ``hook_tokens`` and ``hook_reports`` tables: who may report through the hook channel.

Each agent that reports through ``the-loop hook`` holds a per-session secret given at spawn;
only its sha256 is stored here, with the agent it speaks for (``hook_tokens``: one row per
agent, replaced at each spawn; the hash before it stays valid until the next spawn, so an agent
found already running keeps reporting). ``hook_reports`` records each applied report by its
id, so that a report sent twice (a resend after a dropped connection, a spooled copy) is
applied once, and a resent permission request finds the prompt it opened.
"""

from __future__ import annotations

from dataclasses import dataclass

from the_loop.store.conn import Connection

REPORTS_KEPT_SECONDS = 7 * 86400.0
"""How long an applied report's id is remembered (a resend comes within Claude Code's own
hook timeout)."""


@dataclass(frozen=True, slots=True)
class HookToken:
    """The agent a token speaks for, the work item it was spawned for, and the directory its
    harness keeps transcripts under (None: no reported transcript path is taken)."""

    agent: str
    work_item: str | None
    transcript_root: str | None


def issue(
    tx: Connection,
    agent: str,
    token_hash: str,
    *,
    work_item: str | None,
    transcript_root: str | None,
    now: float,
) -> None:
    """Make TOKEN_HASH the token of AGENT (at a spawn); the one before stays valid as its
    previous token until the next issue."""
    tx.execute(
        "INSERT INTO hook_tokens (agent, token_hash, work_item, transcript_root, issued_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (agent) DO UPDATE SET"
        " previous_hash = hook_tokens.token_hash, token_hash = excluded.token_hash,"
        " work_item = excluded.work_item, transcript_root = excluded.transcript_root,"
        " issued_at = excluded.issued_at",
        (agent, token_hash, work_item, transcript_root, now),
    )


def keep_previous(tx: Connection, agent: str) -> None:
    """AGENT was found already running (the spawn did not happen): its previous token is its
    token again."""
    tx.execute(
        "UPDATE hook_tokens SET token_hash = previous_hash, previous_hash = NULL"
        " WHERE agent = ? AND previous_hash IS NOT NULL",
        (agent,),
    )


def revoke(tx: Connection, agent: str) -> None:
    """AGENT's tokens speak for it no more, current and previous (its agent on a dead node
    holds them: the node that took AGENT over issues it a new one at its spawn)."""
    tx.execute("DELETE FROM hook_tokens WHERE agent = ?", (agent,))


def lookup(conn: Connection, token_hash: str) -> HookToken | None:
    """Whose token TOKEN_HASH is (current or previous), None when nobody's."""
    row = conn.execute(
        "SELECT agent, work_item, transcript_root FROM hook_tokens"
        " WHERE token_hash = ? OR previous_hash = ?",
        (token_hash, token_hash),
    ).fetchone()
    return None if row is None else HookToken(str(row[0]), row[1], row[2])


def applied(conn: Connection, report_id: str) -> tuple[str, str | None] | None:
    """The agent and prompt of report REPORT_ID if it was applied, else None."""
    row = conn.execute(
        "SELECT agent, prompt_id FROM hook_reports WHERE id = ?", (report_id,)
    ).fetchone()
    return None if row is None else (str(row[0]), row[1])


def applied_since(conn: Connection, agent: str, at: float) -> bool:
    """Whether a report of AGENT recorded at a time after AT was applied."""
    row = conn.execute(
        "SELECT 1 FROM hook_reports WHERE at > ? AND agent = ? LIMIT 1", (at, agent)
    ).fetchone()
    return row is not None


def record(tx: Connection, report_id: str, agent: str, prompt_id: str | None, now: float) -> None:
    """Record report REPORT_ID of AGENT as applied (PROMPT_ID: the prompt it opened)."""
    tx.execute(
        "INSERT INTO hook_reports (id, agent, prompt_id, at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO NOTHING",
        (report_id, agent, prompt_id, now),
    )


def prune(tx: Connection, before: float) -> int:
    """Forget the ids of reports applied before BEFORE; how many."""
    return int(tx.execute("DELETE FROM hook_reports WHERE at < ?", (before,)).rowcount)
