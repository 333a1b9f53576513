"""The one health model: what ``GET /api/v1/health`` answers, what ``GET /api/v1/status``
embeds and what ``the-loop status`` reads back from the daemon. ``the_loop.status`` computes
it; this module stays light so that clients can parse it without loading the services."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Health(BaseModel):
    """``ok`` unless a check found a problem; ``detail`` holds each check's figures by name."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    status: str
    version: str
    problems: list[str] = []
    detail: dict[str, Any] = {}

    @property
    def ok(self) -> bool:
        return self.status == "ok" and not self.problems
