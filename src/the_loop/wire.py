"""The one output contract: how every object looks in JSON, on every surface.

The CLI's ``--format json``, the REST API, MCP tool results and the SSE stream all render
objects through this module, so that one object has one shape everywhere:

- keys are camelCase (``Wire`` models: ``alias_generator=to_camel``, serialized by alias even
  by plain ``model_dump()`` and ``pydantic_core.to_json``);
- timestamps are ISO 8601 in UTC with milliseconds and ``Z`` (``2026-12-01T12:34:56.789Z``):
  a field typed ``Timestamp`` (epoch seconds in Python) or ``UtcDatetime`` (an aware
  ``datetime``) is a number or a datetime in Python and that string in JSON, and either
  type reads the string back (so a model parses what the API answered).

Adding a field to an object is one line on its model. ``to_wire`` renders anything a surface
returns (models, lists, dicts, dataclasses, enums) into plain JSON values.

This module imports only pydantic: the CLI loads it at start-up.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from enum import Enum
from pathlib import PurePath
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer, WithJsonSchema
from pydantic.alias_generators import to_camel

__all__ = [
    "WIRE_CONFIG",
    "Timestamp",
    "UtcDatetime",
    "Wire",
    "dumps",
    "iso",
    "iso_now",
    "parse_iso",
    "to_wire",
]

WIRE_CONFIG = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)
"""The model config of every object a surface shows (for models that cannot subclass
``Wire``)."""


class Wire(BaseModel):
    """Base of the objects the surfaces show: camelCase keys in JSON (and by default in
    ``model_dump``); fields are set by name or by alias. A store that needs the Python names
    dumps with ``by_alias=False``."""

    model_config = WIRE_CONFIG


def iso(value: float | datetime) -> str:
    """VALUE (epoch seconds, or a datetime; a naive one is taken as UTC) as ISO 8601 UTC with
    milliseconds: ``2026-12-01T12:34:56.789Z``."""
    if isinstance(value, datetime):
        moment = value.astimezone(UTC) if value.tzinfo is not None else value
    else:
        moment = datetime.fromtimestamp(value, UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="milliseconds") + "Z"


def json_text(values: Any, indent: int | None = 2) -> str:
    """Plain JSON VALUES as text (non-ASCII kept); compact when INDENT is None."""
    separators = (",", ":") if indent is None else None
    return json.dumps(values, indent=indent, separators=separators, ensure_ascii=False)


def iso_now() -> str:
    """Now, as ``iso`` writes it (for event payloads that say when something happened)."""
    return iso(datetime.now(UTC))


def parse_iso(text: str) -> datetime:
    """The aware datetime of an ISO 8601 TEXT (``Z`` or an offset; none means UTC);
    ``ValueError`` for anything else."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _epoch(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return parse_iso(value).timestamp()
        except ValueError:
            return value  # a number in a string, or garbage: pydantic's float says which
    if isinstance(value, datetime):
        return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    return value


def _aware(value: Any) -> Any:
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


_TIME_SCHEMA = WithJsonSchema({"type": "string", "format": "date-time"})

Timestamp = Annotated[
    float,
    BeforeValidator(_epoch),
    PlainSerializer(iso, return_type=str, when_used="json"),
    _TIME_SCHEMA,
]
"""A moment kept as epoch seconds in Python, ISO 8601 UTC in JSON (and read back from it)."""

UtcDatetime = Annotated[
    datetime,
    BeforeValidator(_aware),
    PlainSerializer(iso, return_type=str, when_used="json"),
    _TIME_SCHEMA,
]
"""A moment kept as an aware datetime in Python, ISO 8601 UTC in JSON."""


def to_wire(obj: Any) -> Any:
    """OBJ as plain JSON values in the output contract: models by alias in JSON mode,
    dataclasses with camelCase keys, datetimes as ``iso``, enums by value, paths as text;
    lists, tuples and dicts element by element (dict keys are kept as given)."""
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", by_alias=True)
    if isinstance(obj, dict):
        return {str(k): to_wire(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_wire(v) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {to_camel(f.name): to_wire(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, datetime):
        return iso(obj)
    if isinstance(obj, Enum):
        return to_wire(obj.value)
    if isinstance(obj, PurePath):
        return str(obj)
    return obj


def dumps(obj: Any, indent: int | None = 2) -> str:
    """OBJ as JSON text in the output contract (``to_wire``); compact when INDENT is None."""
    return json_text(to_wire(obj), indent)
