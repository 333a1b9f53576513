"""What an agent gets at spawn so that it can report its own attention (``the-loop hook``):
its key, the database, and the answer-timeout policy, in its environment."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from the_loop.attention_hook import (
    AGENT_ENV,
    DB_ENV,
    ON_TIMEOUT_ENV,
    TIMEOUT_ENV,
    WORK_ITEM_ENV,
)
from the_loop.store import attention as store

REPORTING = ("hooks", "notify")
"""The ``signals`` modes in which the harness runs ``the-loop hook`` itself."""

if TYPE_CHECKING:
    from the_loop.agent.model import Agent
    from the_loop.context import Ctx
    from the_loop.store.conn import Connection


def spawn_env(ctx: Ctx, agent: Agent, adapter: str) -> dict[str, str]:
    """The environment that lets AGENT's harness (adapter ADAPTER) report through hooks or its
    notify program; empty when its attention is read otherwise (``attention.harnesses``)."""
    settings = ctx.config.attention
    if settings.harness(agent.harness, adapter).signals not in REPORTING:
        return {}
    env = {
        AGENT_ENV: agent.key,
        DB_ENV: ctx.db.hook_address(),
        TIMEOUT_ENV: str(settings.answer_timeout_minutes * 60),
        ON_TIMEOUT_ENV: settings.on_timeout,
    }
    if agent.label and not agent.key.startswith("standing:"):
        env[WORK_ITEM_ENV] = agent.label
    return env


def note_delivered(ctx: Ctx, tx: Connection, agent: Agent) -> None:
    """In TX (the one that marks a prompt delivered): AGENT is ``working`` when its harness
    reports only finished turns (``signals: notify``): a delivered prompt starts a turn, and
    the notify program says when it ends."""
    configured = ctx.config.harnesses.get(agent.harness)
    adapter = configured.adapter if configured else None
    if ctx.config.attention.harness(agent.harness, adapter).signals != "notify":
        return
    standing = agent.key.startswith(store.STANDING_PREFIX)
    store.set_state(
        tx,
        agent.key,
        store.WORKING,
        "delivery",
        "a prompt was delivered",
        now=time.time(),
        work_item=None if standing else agent.label or None,
        standing=agent.key.removeprefix(store.STANDING_PREFIX) if standing else None,
        source="delivery",
    )
