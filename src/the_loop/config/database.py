"""The ``database:`` section: where the state lives (the embedded SQLite file by default, or a
PostgreSQL database several nodes share)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel


class DatabaseConfig(BaseModel):
    """Where the state lives."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    url: str | None = Field(
        None,
        description=(
            "Unset: the SQLite file `the-loop.db` in `stateDir`. `postgresql://user@host:port/db`"
            ": that PostgreSQL database (several daemons, `node`s, may share it; the CLI on any "
            "host). Keep the "
            "password out of the URL: libpq reads `PGPASSWORD` or `~/.pgpass`. Restart-only."
        ),
    )
    pool_size: int = Field(
        16, ge=2, le=200, description="PostgreSQL: connections this process keeps at most."
    )

    @field_validator("url")
    @classmethod
    def _postgres_only(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        if not value.startswith(("postgresql://", "postgres://")):
            raise ValueError("database.url must be a postgresql:// URL (unset means SQLite)")
        return value
