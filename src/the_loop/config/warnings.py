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
        out.append(
            "routing.authorizedUsers is empty: no GitHub comment can start or steer an agent "
            "(fail closed); `the-loop sessions start`, the API and the dashboard still can"
        )
    hook = config.github.webhook
    signed_or_allowed = hook.allow_unsigned or os.environ.get(hook.secret_env)
    if config.github.enabled and hook.enabled and not signed_or_allowed:
        out.append(
            f"github.webhook is enabled but ${hook.secret_env} is unset: every webhook "
            "delivery is refused until it is set (or set github.webhook.enabled: false "
            "and rely on the poller)"
        )
    if config.budgets.any_usd and not config.budgets.any_prices:
        out.append(
            "budgets set a dollar limit but budgets.prices is empty and budgets.defaultPrices "
            "is false: costs stay unpriced and only budgets.maxTurns can stop an agent"
        )
    out += _slack(config)
    return out


def _slack(config: Config) -> list[str]:
    slack = config.slack
    declared = [s for s in config.standing.sessions if s.slack.enabled]
    if not slack.enabled:
        if declared:
            names = ", ".join(s.name for s in declared)
            return [f"slack.enabled is off: standing session {names} is not announced in Slack"]
        return []
    out: list[str] = []
    if not os.environ.get(slack.signing_secret_env):
        out.append(
            f"slack.enabled but ${slack.signing_secret_env} is unset: every Slack request is "
            "refused until it is set"
        )
    if not os.environ.get(slack.bot_token_env):
        out.append(
            f"slack.enabled but ${slack.bot_token_env} is unset: nothing can be posted to Slack"
        )
    if not slack.authorized_users:
        out.append("slack.authorizedUsers is empty: nobody can talk to agents from Slack")
    if slack.work_items and not slack.channel:
        out.append("slack.workItems is on but slack.channel is unset: no spawn is announced")
    for entry in declared:
        if not (entry.slack.channel or slack.channel):
            out.append(
                f"standing session {entry.name} has slack.enabled but no channel (and "
                "slack.channel is unset): it is not announced"
            )
    return out
