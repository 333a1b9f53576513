"""What a Slack request holds, decoded once at intake into a small typed form that the inbox
keeps (``Intake.stored``) and the inbox worker reads back (``stored_work``), never the raw
body again.

Two kinds: a ``SlackMessage`` (an ``event_callback`` of the Events API: its event id, the
event's type and subtype, channel, user, text, ``ts`` and ``thread_ts``, and whether a bot
sent it) and a ``SlackPress`` (a ``block_actions`` interaction: who pressed which of our
buttons on which message). Anything else Slack sends is kept as a message of another type and
dropped with a reason when processed.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Annotated, Any, Literal
from urllib.parse import parse_qs

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from the_loop.errors import BadInput

SOURCE = "slack"
EVENT = "slack.event"
INTERACTION = "slack.interaction"
ALLOW_ACTION = "the_loop_allow"
DENY_ACTION = "the_loop_deny"
ANSWER_ACTION = "the_loop_answer"
"""A question's choice; its button's value is ``<prompt id>.<number of the choice>``."""
_EVENT_ID_RE = re.compile(r"\A[A-Za-z0-9._-]{1,64}\Z")
_ID_RE = re.compile(r"\A[A-Za-z0-9._-]{1,80}\Z")
TEXT_LIMIT = 40_000


class SlackMessage(BaseModel):
    """One Events API event (a ``message``, or another type that is only dropped)."""

    kind: Literal["message"] = "message"
    event_id: str
    event_type: str
    subtype: str | None = None
    channel: str = ""
    user: str | None = None
    bot: bool = False
    text: str = ""
    ts: str = ""
    thread_ts: str | None = None


class SlackPress(BaseModel):
    """A press of one of the-loop's buttons."""

    kind: Literal["press"] = "press"
    user: str
    channel: str
    message_ts: str
    action: str
    prompt_id: str
    choice: int | None = None
    """The number of the choice pressed (``ANSWER_ACTION``)."""


SlackWork = Annotated[SlackMessage | SlackPress, Field(discriminator="kind")]
_WORK: TypeAdapter[SlackMessage | SlackPress] = TypeAdapter(SlackWork)


class Intake(BaseModel):
    """A Slack request decoded once: its inbox key, inbox event name, lane and work."""

    delivery_id: str
    event_name: str
    lane: str
    work: SlackWork

    def stored(self) -> str:
        return self.work.model_dump_json()


def stored_work(text: str) -> SlackMessage | SlackPress:
    """The work an inbox row keeps (``BadInput`` when it cannot be read)."""
    try:
        return _WORK.validate_json(text)
    except ValidationError as exc:
        raise BadInput(f"unreadable Slack work: {exc.errors()[0]['msg']}") from None


def _str(value: Any, limit: int = 200) -> str | None:
    return value if isinstance(value, str) and len(value) <= limit else None


def _id(value: Any) -> str:
    text = _str(value)
    return text if text is not None and _ID_RE.match(text) else ""


def event_intake(payload: dict[str, Any]) -> Intake:
    """The intake of an ``event_callback`` body; ``BadInput`` when it lacks a usable event id
    or event."""
    event_id = _str(payload.get("event_id"))
    if event_id is None or not _EVENT_ID_RE.match(event_id):
        raise BadInput("missing or invalid event_id")
    event = payload.get("event")
    if not isinstance(event, dict):
        raise BadInput("missing event")
    inner = event.get("message")
    edited: dict[str, Any] = inner if isinstance(inner, dict) else {}
    message = SlackMessage(
        event_id=event_id,
        event_type=_str(event.get("type"), 80) or "unknown",
        subtype=_str(event.get("subtype"), 80),
        channel=_id(event.get("channel")),
        user=_id(event.get("user")) or _id(edited.get("user")) or None,
        bot=bool(event.get("bot_id")) or event.get("subtype") == "bot_message",
        text=(_str(event.get("text"), TEXT_LIMIT) or ""),
        ts=_id(event.get("ts")),
        thread_ts=_id(event.get("thread_ts")) or None,
    )
    thread = message.thread_ts or message.ts or event_id
    return Intake(
        delivery_id=f"slack-{event_id}",
        event_name=EVENT,
        lane=f"slack:{message.channel}:{thread}",
        work=message,
    )


def interaction_intake(body: bytes) -> Intake:
    """The intake of an interaction request (form-encoded ``payload`` JSON); ``BadInput`` for
    anything that is not a press of one of our buttons."""
    try:
        form = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload = json.loads(form["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError, IndexError):
        raise BadInput("the body must be form-encoded with a JSON payload") from None
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        raise BadInput("only block_actions interactions are handled")
    actions = payload.get("actions")
    user = payload.get("user")
    channel = payload.get("channel")
    container = payload.get("container")
    if not (isinstance(actions, list) and actions and isinstance(actions[0], dict)):
        raise BadInput("the interaction names no action")
    if not (isinstance(user, dict) and isinstance(channel, dict) and isinstance(container, dict)):
        raise BadInput("the interaction lacks user, channel or container")
    action = actions[0]
    value, choice = _id(action.get("value")), None
    if _id(action.get("action_id")) == ANSWER_ACTION:
        prompt_id, _, number = value.rpartition(".")
        value, choice = (
            (prompt_id, int(number)) if number.isdigit() and len(number) <= 2 else ("", None)
        )
    press = SlackPress(
        user=_id(user.get("id")),
        channel=_id(channel.get("id")),
        message_ts=_id(container.get("message_ts")),
        action=_id(action.get("action_id")),
        prompt_id=value,
        choice=choice,
    )
    if not (press.user and press.channel and press.message_ts and press.action):
        raise BadInput("the interaction lacks a user, channel, message or action id")
    trigger = _id(payload.get("trigger_id")) or hashlib.sha256(body).hexdigest()[:32]
    return Intake(
        delivery_id=f"slack-press-{trigger}"[:100],
        event_name=INTERACTION,
        lane=f"slack:{press.channel}:{press.message_ts}",
        work=press,
    )
