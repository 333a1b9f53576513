"""What an agent gets at spawn so that it can report its own attention (``the-loop hook``):
its key, a fresh per-session secret and the hook channel's directory, in its environment.

Nothing else: no database address, no credential that opens anything but its own channel. The
secret's sha256 is stored with the agent's key (``store.hook_tokens``), replaced at each spawn;
the daemon (``agent.attention.channel``) takes a report only from the holder of that secret, and
only for that agent.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.harness import claude_dir, codex_home
from the_loop.hook import (
    AGENT_ENV,
    HOOK_DIR_ENV,
    SPOOL_ENV,
    SPOOL_NAME,
    TOKEN_ENV,
    WORK_ITEM_ENV,
)
from the_loop.store import attention as store
from the_loop.store import hook_tokens

HOOK_DIR = "hook"
"""The hook channel's directory under the state dir: ``daemon.sock`` and ``spool/``."""
REPORTING = ("hooks", "notify")
"""The ``signals`` modes in which the harness runs ``the-loop hook`` itself."""

if TYPE_CHECKING:
    from collections.abc import Mapping

    from the_loop.agent.model import Agent
    from the_loop.context import Ctx
    from the_loop.store import Database
    from the_loop.store.conn import Connection


def hook_dir(state_dir: Path) -> Path:
    """Where the hook channel of the daemon of STATE_DIR lives."""
    return state_dir / HOOK_DIR


def agent_spool(state_dir: Path, agent: str) -> Path:
    """AGENT's own spool directory (``<hook dir>/spool/<hash of its key>``, 0700): its spooled
    reports carry its token, so no other agent's sandbox is given it."""
    name = hashlib.sha256(agent.encode("utf-8")).hexdigest()[:16]
    return hook_dir(state_dir) / SPOOL_NAME / name


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue_token(
    db: Database, agent: str, *, work_item: str | None, transcript_root: str | None
) -> str:
    """A fresh secret for AGENT (32 random bytes, hex); its hash replaces AGENT's token."""
    token = os.urandom(32).hex()
    with db.transaction() as tx:
        hook_tokens.issue(
            tx,
            agent,
            token_hash(token),
            work_item=work_item,
            transcript_root=transcript_root,
            now=time.time(),
        )
    return token


def spawn_env(
    ctx: Ctx, agent: Agent, adapter: str, launch_env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment that lets AGENT's harness (adapter ADAPTER) report through hooks or its
    notify program; empty when its attention is read otherwise (``attention.harnesses``).
    Issues AGENT a new hook token. LAUNCH_ENV, when given, is the launch's whole extra
    environment (a confined agent's own home decides where its transcripts are)."""
    settings = ctx.config.attention
    if settings.harness(agent.harness, adapter).signals not in REPORTING:
        return {}
    work_item = agent.label if agent.label and not agent.key.startswith("standing:") else None
    root = transcript_root(adapter, launch_env or ctx.config.harness(agent.harness).env)
    token = issue_token(
        ctx.db,
        agent.key,
        work_item=work_item,
        transcript_root=None if root is None else str(root),
    )
    env = {
        AGENT_ENV: agent.key,
        TOKEN_ENV: token,
        HOOK_DIR_ENV: str(hook_dir(ctx.state_dir)),
    }
    spool = agent_spool(ctx.state_dir, agent.key)
    for path in (spool.parent.parent, spool.parent, spool):
        path.mkdir(exist_ok=True, mode=0o700)
    env[SPOOL_ENV] = str(spool)
    if work_item:
        env[WORK_ITEM_ENV] = work_item
    return env


def transcript_root(adapter: str, env: Mapping[str, str]) -> Path | None:
    """The directory a harness of ADAPTER (with extra environment ENV over the daemon's) keeps
    its transcripts under: Claude Code's config dir (``CLAUDE_CONFIG_DIR``, else
    ``~/.claude``), Codex's ``CODEX_HOME`` (else ``~/.codex``); None for any other adapter (a
    reported transcript path is then not taken)."""
    if adapter == "claude":
        return claude_dir(env).absolute()
    if adapter == "codex":
        return codex_home(env).absolute()
    return None


def keep_previous_token(ctx: Ctx, agent: Agent, env: Mapping[str, str]) -> None:
    """AGENT's spawn with ENV (from ``spawn_env``) found it already running: when ENV issued
    a token, the one the running agent holds is its token again."""
    if TOKEN_ENV not in env:
        return
    with ctx.db.transaction() as tx:
        hook_tokens.keep_previous(tx, agent.key)


DELIVERY = "delivery"
"""The signal (and source) of the ``working`` a delivered prompt starts for a notify harness."""


def note_delivered(ctx: Ctx, tx: Connection, agent: Agent, began: float) -> None:
    """In TX (the one that marks a prompt delivered): AGENT is ``working`` when its harness
    reports only finished turns (``signals: notify``): a delivered prompt starts a turn, and
    the notify program says when it ends. Recorded as of BEGAN, when the paste began (a notify
    that started before it is of an earlier turn), and not at all when the agent's state
    changed since then: the turn may have ended, and been reported, before this transaction
    (a fast turn, a slow daemon), and would otherwise read ``working`` until the next one."""
    if ctx.config.attention_of(agent.harness).signals != "notify":
        return
    row = store.get(tx, agent.key)
    if row is not None and row.updated_at >= began:
        return
    standing = agent.key.startswith(store.STANDING_PREFIX)
    store.set_state(
        tx,
        agent.key,
        store.WORKING,
        DELIVERY,
        "a prompt was delivered",
        now=began,
        work_item=None if standing else agent.label or None,
        standing=agent.key.removeprefix(store.STANDING_PREFIX) if standing else None,
        source=DELIVERY,
    )
