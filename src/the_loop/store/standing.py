"""Standing session records: one row per name, for created definitions and for the runtime state
(conversation id, running or stopped) of every standing session the-loop has started.

A ``created`` row holds the whole definition as the operator gave it (``None`` harness, args or
cwd mean "inherit"). A ``declared`` row exists once a declared session was started; its
definition columns are a snapshot of the last start, the config stays the source of truth.
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator
from pydantic.alias_generators import to_camel

from the_loop.errors import Conflict
from the_loop.store.conn import Connection


class StandingSource(StrEnum):
    declared = "declared"
    created = "created"


class StandingStatus(StrEnum):
    """What the-loop last did: ``running`` from just before a spawn, ``stopped`` once the
    tmux session is gone (or a spawn failed)."""

    running = "running"
    stopped = "stopped"


class StandingRecord(BaseModel):
    """One standing session row, as stored."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    name: str
    source: StandingSource
    harness: str | None = None
    args: list[str] | None = None
    cwd: str | None = None
    prompt: str = ""
    description: str = ""
    auto_start: bool = True
    conversation_id: str | None = None
    status: StandingStatus = StandingStatus.stopped
    started_at: float | None = None
    last_message_at: float | None = None
    created_at: float
    node: str | None = None
    """The node it is pinned to on a shared database (recorded by its first start there)."""

    @field_validator("args", mode="before")
    @classmethod
    def _args(cls, value: object) -> object:
        return json.loads(value) if isinstance(value, str) else value


_NAMES = [
    "name",
    "source",
    "harness",
    "args",
    "cwd",
    "prompt",
    "description",
    "auto_start",
    "conversation_id",
    "status",
    "started_at",
    "last_message_at",
    "created_at",
    "node",
]
_COLUMNS = ", ".join(_NAMES)


def _record(row: tuple[Any, ...]) -> StandingRecord:
    return StandingRecord.model_validate(dict(zip(_NAMES, row, strict=True)))


def _column_value(name: str, value: Any) -> Any:
    if name == "args":
        return None if value is None else json.dumps(list(value))
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, bool):
        return int(value)
    return value


def get(conn: Connection, name: str) -> StandingRecord | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM standing WHERE name = ?", (name,)).fetchone()
    return _record(row) if row else None


def list_records(conn: Connection) -> list[StandingRecord]:
    """Every record, by name."""
    return [_record(r) for r in conn.execute(f"SELECT {_COLUMNS} FROM standing ORDER BY name")]


def insert(tx: Connection, rec: StandingRecord) -> None:
    """Insert REC; raise ``Conflict`` when a record of that name exists."""
    values = rec.model_dump()
    cur = tx.execute(
        f"INSERT INTO standing ({_COLUMNS}) VALUES ({', '.join('?' * len(_NAMES))})"
        " ON CONFLICT (name) DO NOTHING",
        [_column_value(n, values[n]) for n in _NAMES],
    )
    if cur.rowcount == 0:
        raise Conflict(f"a standing session named {rec.name} is already recorded")


def update(tx: Connection, name: str, **fields: Any) -> None:
    """Set FIELDS (snake_case column names) on the record NAME."""
    unknown = set(fields) - (set(_NAMES) - {"name"})
    if unknown:
        raise ValueError(f"unknown standing fields: {sorted(unknown)}")
    if not fields:
        return
    assignments = ", ".join(f"{key} = ?" for key in fields)
    values = [_column_value(key, value) for key, value in fields.items()]
    tx.execute(f"UPDATE standing SET {assignments} WHERE name = ?", [*values, name])


def delete(tx: Connection, name: str) -> bool:
    """Remove the record NAME; True when there was one."""
    return tx.execute("DELETE FROM standing WHERE name = ?", (name,)).rowcount > 0
