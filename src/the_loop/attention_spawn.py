"""What an agent gets at spawn so that it can report its own attention (``the-loop hook``):
its key, the database, and the answer-timeout policy, in its environment."""

from __future__ import annotations

from typing import TYPE_CHECKING

from the_loop.attention_hook import (
    AGENT_ENV,
    DB_ENV,
    ON_TIMEOUT_ENV,
    TIMEOUT_ENV,
    WORK_ITEM_ENV,
)

if TYPE_CHECKING:
    from the_loop.agent.model import Agent
    from the_loop.context import Ctx


def spawn_env(ctx: Ctx, agent: Agent, adapter: str) -> dict[str, str]:
    """The environment that lets AGENT's harness (adapter ADAPTER) report through hooks;
    empty when its attention is not read from hooks (``attention.harnesses``)."""
    settings = ctx.config.attention
    if settings.harness(agent.harness, adapter).signals != "hooks":
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
