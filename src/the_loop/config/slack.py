"""The ``slack:`` section and a standing session's ``slack:`` block: the Slack app the-loop
answers as (signing secret and bot token from the environment), where it announces, and who
may talk to agents from a thread (decision 0025, docs/slack.md)."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

_ENV_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
_CHANNEL_RE = re.compile(r"\A[A-Z0-9][A-Z0-9_-]{1,79}\Z", re.IGNORECASE)
_USER_RE = re.compile(r"\A[UW][A-Z0-9]{2,40}\Z")


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )


def _channel(value: str | None) -> str | None:
    if value is not None and not _CHANNEL_RE.match(value):
        raise ValueError(f"{value!r} is not a Slack channel id (like C0123ABCD)")
    return value


class StandingSlackConfig(_Model):
    """A standing session's thread: announced in CHANNEL (else ``slack.channel``)."""

    enabled: bool = Field(
        False, description="Announce the session in Slack and bind its thread to it."
    )
    channel: str | None = Field(None, description="Channel id; omitted uses slack.channel.")

    _channel = field_validator("channel")(_channel)


class SlackConfig(_Model):
    """The Slack app: Events API and buttons in, ``slack_sdk`` Web API out."""

    enabled: bool = Field(False, description="Serve /webhooks/slack and post to Slack.")
    signing_secret_env: str = Field(
        "SLACK_SIGNING_SECRET", description="Env var holding the app's signing secret."
    )
    bot_token_env: str = Field("SLACK_BOT_TOKEN", description="Env var holding the bot token.")
    api_url: str = Field(
        "https://slack.com/api", pattern=r"^https?://", description="The Web API's base URL."
    )
    channel: str | None = Field(
        None, description="Channel id for work-item announcements and standing sessions."
    )
    authorized_users: list[str] = Field(
        default_factory=list,
        description="Slack user ids (U…) whose replies and button presses are taken; empty "
        "means nobody (fail closed).",
    )
    work_items: bool = Field(
        False, description="Announce each work-item spawn in slack.channel and bind its thread."
    )
    mirror_to_github: bool = Field(
        True,
        alias="mirrorToGitHub",
        description="Mirror a thread reply delivered to a work item as a marked GitHub comment.",
    )
    prompt_after_seconds: float = Field(
        0.0,
        ge=0,
        description="How long an agent's question or permission prompt waits before it is "
        "posted in the agent's bound thread with its buttons; 0 posts it at once (the notice "
        "on the work item waits attention.notifyAfterSeconds).",
    )
    timeout_seconds: float = Field(
        10.0, gt=0, le=120, description="Timeout of one Web API request."
    )

    _channel = field_validator("channel")(_channel)

    @field_validator("signing_secret_env", "bot_token_env")
    @classmethod
    def _env(cls, value: str) -> str:
        if not _ENV_NAME_RE.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    @field_validator("authorized_users")
    @classmethod
    def _users(cls, value: list[str]) -> list[str]:
        for user in value:
            if not _USER_RE.match(user):
                raise ValueError(f"{user!r} is not a Slack user id (like U0123ABCD)")
        return value
