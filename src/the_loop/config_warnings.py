"""Settings the config accepts but a careful operator should hear about (start, reload,
doctor, ``config validate``)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from the_loop.config import Config


def of(config: Config) -> list[str]:
    """The warnings of CONFIG, one sentence each."""
    out: list[str] = []
    events = config.github.webhook.events
    missing = [e for e in ("issues", "pull_request") if e not in events]
    if missing:
        out.append(
            f"github.webhook.events lacks {', '.join(missing)}: without them a close "
            "never reaches the sessions"
        )
    if config.routing.enabled and not config.routing.authorized_users:
        out.append("routing.authorizedUsers is empty: nobody can start an agent (fail closed)")
    hook = config.github.webhook
    signed_or_allowed = hook.allow_unsigned or os.environ.get(hook.secret_env)
    if config.github.enabled and hook.enabled and not signed_or_allowed:
        out.append(
            f"github.webhook is enabled but ${hook.secret_env} is unset: every webhook "
            "delivery is refused until it is set (or set github.webhook.enabled: false "
            "and rely on the poller)"
        )
    if config.budgets.any_usd and not config.budgets.prices:
        out.append(
            "budgets set a dollar limit but budgets.prices is empty: costs stay $0 and only "
            "budgets.maxTurns can stop an agent"
        )
    slack = [s.name for s in config.standing.sessions if s.slack.enabled]
    if config.slack.enabled or slack:
        where = (
            "slack.enabled"
            if config.slack.enabled
            else f"slack.enabled of standing session {', '.join(slack)}"
        )
        out.append(
            f"{where}: this version has no Slack integration yet; nothing is received "
            "from or posted to Slack (docs/decisions/0019-lifecycle-verbs.md)"
        )
    return out
