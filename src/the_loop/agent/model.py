"""What the agent-session layer knows about one agent session, and what its operations return.

An ``Agent`` is the same thing for a work-item session and a standing session: a key (its
prompt queue and the ownership mark on its tmux target), a harness with its extra argv, a
runner, a tmux target, a working directory and the harness's conversation id. The policies
(work items, standing sessions) build one from their records; the layer does the rest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TypedDict

from the_loop.harness import RunnerKind
from the_loop.refs import standing_of


class AgentKind(StrEnum):
    WORK_ITEM = "work-item"
    STANDING = "standing"

    @classmethod
    def of(cls, key: str) -> AgentKind:
        """The kind of the agent whose key is KEY (``refs.standing_key`` for a standing one)."""
        return cls.STANDING if standing_of(key) is not None else cls.WORK_ITEM


class EventNames(TypedDict):
    """What an event about an agent names it by (``events.emit``'s keywords)."""

    work_item: str | None
    standing: str | None
    session_id: str | None


@dataclass
class Agent:
    """One agent session. ``conversation_id`` is updated by the layer when it learns one."""

    key: str
    kind: AgentKind
    harness: str
    runner: RunnerKind
    cwd: Path
    target: str | None = None
    args: list[str] | None = None
    conversation_id: str | None = None
    label: str = ""

    @property
    def owner(self) -> str:
        """The ownership mark the layer sets on the agent's tmux target at spawn."""
        return self.key

    @property
    def event_names(self) -> EventNames:
        """What an event about this agent names: its work item and session, or its standing
        name and conversation."""
        if self.kind is AgentKind.WORK_ITEM:
            return EventNames(work_item=self.label, standing=None, session_id=self.key)
        return EventNames(
            work_item=None, standing=standing_of(self.key), session_id=self.conversation_id
        )

    @property
    def tmux_target(self) -> str:
        """The tmux target (only for agents under the tmux runner)."""
        if self.target is None:
            raise AssertionError(f"agent {self.key} has no tmux target")
        return self.target


@dataclass(frozen=True, slots=True)
class Started:
    """A fresh start: the conversation id the harness runs (chosen or learned), and whether
    the start consumed the first prompt (``took_prompt``; else it is still to be delivered)."""

    conversation_id: str | None
    took_prompt: bool = False


@dataclass(frozen=True, slots=True)
class Resumed:
    """A resume: ``resumed`` when the recorded conversation came back and stayed alive;
    otherwise a fresh conversation was started. ``attempted`` says whether resuming was tried
    (a conversation was recorded and resuming is on); ``detail`` says why it was not kept."""

    resumed: bool
    attempted: bool
    conversation_id: str | None
    previous: str | None
    detail: str = ""


CANNOT_WORK = "held while the agent cannot work"
"""How a reason to hold starts when the agent cannot work (no login, no key, no credit)."""
BEHIND_DRAFT = "held behind unsent text in the agent's input box"
"""The reason to hold while the agent's input box holds a person's draft (``core.draft``)."""


def held_detail(why: str, where: str) -> str:
    """What a person is told of a message held for WHY (``dialog``, ``draft``) in WHERE (a
    session id, a standing name): why it waits, and when it is delivered."""
    if why.startswith(CANNOT_WORK):
        until = "delivered once it can work"
    elif why == BEHIND_DRAFT:
        until = "delivered once that text is sent or cleared"
    else:
        until = "delivered once it is answered"
    return f"{why} in {where}; {until}"


@dataclass(slots=True)
class Flushed:
    """A delivery pass: how many queued prompts reached the agent, their sizes, in order, and
    ``held``: why the rest wait in the queue (a dialog the agent shows), None when none do."""

    delivered: list[int] = field(default_factory=list)
    held: str | None = None

    @property
    def count(self) -> int:
        return len(self.delivered)
