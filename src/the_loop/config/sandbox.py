"""The ``sandbox:`` section (SPEC §18): how each agent's pane is confined."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-:[]*")


class SandboxConfig(BaseModel):
    """Confinement of every agent pane (work items and standing sessions alike)."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", validate_default=True
    )

    mode: Literal["bwrap", "none"] | None = Field(
        None,
        description=(
            "`bwrap`: each agent's harness runs in a bubblewrap sandbox that holds its worktree "
            "(or a standing session's cwd), its own home and the system read-only, and nothing "
            "of the control plane. `none`: agents run as the-loop's own user and can reach "
            "everything it can (docs/security.md). Unset: `bwrap` where bubblewrap works, else "
            "`none` with a warning; `the-loop doctor` says which and why."
        ),
    )
    network: Literal["open", "allowlist", "none"] = Field(
        "allowlist",
        description=(
            "`allowlist`: the agent has its own network namespace and reaches only `allowHosts` "
            "through the daemon's proxy (each refusal is a `sandbox.egress_refused` event); "
            "`none`: no network at all; `open`: the host's network."
        ),
    )
    allow_hosts: list[str] | None = Field(
        None,
        description=(
            "Hosts (`name`, `name:port`, `*.suffix`) an `allowlist` agent may reach. Unset: "
            "the model APIs of the configured harnesses (and the host of an `ANTHROPIC_BASE_URL`"
            " / `OPENAI_BASE_URL` they set, in their `env` or in the operator's Claude Code "
            "`settings.json`, and of each model provider's `base_url` in the operator's Codex "
            "`config.toml`) and the GitHub host and API host. A loopback "
            "`127.0.0.1:PORT` is mirrored inside the sandbox on the same port, from 1024 up: "
            "a lower one cannot be (`doctor` and `start` say so), and the agent cannot reach it."
        ),
    )
    github: Literal["write", "read", "none"] = Field(
        "write",
        description=(
            "What a confined agent may do on GitHub through the daemon's broker, which adds "
            "the token on the way out (network `allowlist` only): `write` fetches and pushes "
            "the item's own branch of the item's repository, reads its API and posts comments "
            "on the item (marked as the-loop's); `read` fetches and reads only; `none` nothing. "
            "The GitHub token is never in a confined agent's environment or files."
        ),
    )
    read_only_paths: list[Path] = Field(
        default_factory=list,
        description="More paths bound read-only into every sandbox (a toolchain, a cache).",
    )
    writable_paths: list[Path] = Field(
        default_factory=list, description="More paths bound read-write into every sandbox."
    )
    memory_mb: int | None = Field(
        None,
        ge=64,
        description=(
            "Memory (MiB, swap included) each confined agent may use in all, by a cgroup of "
            "its own where the kernel delegates one to the daemon; an agent past it is killed "
            "by the kernel's OOM killer. `the-loop doctor` says how it is enforced, or why not."
        ),
    )
    pids: int | None = Field(
        None,
        ge=8,
        description=(
            "Processes and threads each confined agent may have at once (the sandbox's own "
            "included), by a pids cgroup of its own, else by RLIMIT_NPROC in its user "
            "namespace (a daemon not running as root); a fork past it fails. `the-loop doctor` "
            "says how it is enforced, or why not."
        ),
    )

    @field_validator("allow_hosts")
    @classmethod
    def _hosts(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
        out = []
        for host in value:
            lowered = host.strip().lower()
            if not lowered or not _HOST_CHARS.issuperset(lowered):
                raise ValueError(f"sandbox.allowHosts: {host!r} is not a host name")
            out.append(lowered)
        return out

    @field_validator("read_only_paths", "writable_paths")
    @classmethod
    def _absolute(cls, value: list[Path]) -> list[Path]:
        paths = [path.expanduser() for path in value]
        for path in paths:
            if not path.is_absolute():
                raise ValueError(f"{path} is not an absolute path")
        return paths
