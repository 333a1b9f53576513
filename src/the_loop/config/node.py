"""The ``node:`` section: this daemon's name among the nodes sharing one database, and when a
silent node counts as dead."""

from __future__ import annotations

import re
import socket

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

ENV_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
URL_RE = re.compile(r"\Ahttps?://[^\s/?#]+(/[^\s?#]*)?\Z")
NODE_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._-]{0,62}\Z")
NODE_GRAMMAR = "1-63 characters: letters, digits, '.', '_' and '-', starting with a letter or digit"


def default_node_name() -> str:
    """This host's name, cut to what a node name allows (``node`` when nothing is left)."""
    raw = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname().split(".")[0])[:63]
    raw = raw.lstrip("._-")
    return raw or "node"


def node_name_field(value: str | None) -> str | None:
    """A field validator: VALUE, a node name or None."""
    if value is not None and not NODE_NAME_RE.match(value):
        raise ValueError(f"invalid node name {value!r}: {NODE_GRAMMAR}")
    return value


class NodeConfig(BaseModel):
    """This daemon as a node of a cluster (several daemons on one PostgreSQL database)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    name: str | None = Field(
        None,
        description=(
            "This node's name (unset: the host name). Unique among the daemons sharing one "
            "database: a second daemon with the same name is refused. Every session records "
            "the node it runs on. Restart-only."
        ),
    )
    dead_after_seconds: float = Field(
        30.0,
        ge=1.0,
        le=3600.0,
        description=(
            "A node whose heartbeat is older than this is reported dead (event `node.dead`) "
            "and its sessions `orphaned`: the next event for one respawns it on a live node. "
            "A node that has not written its own heartbeat for half of it claims no work. "
            "Every node of a cluster should use the same value. Restart-only."
        ),
    )

    url: str | None = Field(
        None,
        description=(
            "The URL other nodes reach this node's API on (`http://agents-1.internal:8080`); "
            "unset: `http://<server.host>:<port>`. Published in the node's heartbeat row. "
            "Restart-only."
        ),
    )
    cluster_token_env: str | None = Field(
        None,
        description=(
            "The environment variable holding the cluster token, one secret (at least 32 "
            "characters) shared by every node. With it, a node reads the screen of another "
            "node's session from that node over HTTP; unset or empty: the screen API answers "
            "with the command to run on the owning node. Restart-only."
        ),
    )

    _safe = field_validator("name")(node_name_field)

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not URL_RE.match(value):
            raise ValueError(f"invalid node URL {value!r}: http://HOST[:PORT] or https://...")
        return value.rstrip("/") if value is not None else None

    @field_validator("cluster_token_env")
    @classmethod
    def _env(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME_RE.match(value):
            raise ValueError(f"{value!r} is not an environment variable name")
        return value

    @property
    def resolved_name(self) -> str:
        """``name``, or the host name when it is unset."""
        return self.name or default_node_name()

    @property
    def heartbeat_seconds(self) -> float:
        """How often the node writes its heartbeat and looks for dead peers."""
        return max(0.2, self.dead_after_seconds / 6)
