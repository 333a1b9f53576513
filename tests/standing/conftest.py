"""Fixtures for standing session tests: an installation whose default harness is the fake agent,
with one declared session (``supervisor``), real tmux on the installation's private socket."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, Env
from tests.fakes import fake_agent
from tests.helpers import wait_until
from tests.work import fake_harness
from the_loop.config import load_config
from the_loop.context import Ctx, open_ctx

fake_agent_harness = fake_harness  # the fake agent as a `command` harness


@dataclass
class Standing:
    """One installation and helpers to look at what its standing sessions did."""

    env: Env
    agent_dir: Path
    cli: Any

    def configure(
        self,
        declared: list[dict[str, Any]] | None = None,
        harness_env: dict[str, str] | None = None,
        enabled: bool = False,
        **sections: Any,
    ) -> None:
        harnesses = {"fake": fake_agent_harness(self.agent_dir, **(harness_env or {}))}
        self.env.write_config(
            harnesses={**harnesses, **sections.pop("harnesses", {})},
            routing={"defaultHarness": "fake", **sections.pop("routing", {})},
            tmux={"resumeProbeSeconds": 0.5, **sections.pop("tmux", {})},
            standing={"enabled": enabled, "sessions": declared or []},
            **sections,
        )

    def ok(self, *args: str) -> CliResult:
        result = self.cli(*args)
        assert result.exit_code == 0, f"{args}: {result.stdout}{result.stderr}"
        return result

    def listed(self) -> dict[str, dict[str, Any]]:
        rows = json.loads(self.ok("standing", "list", "--format", "json").stdout)
        return {row["name"]: row for row in rows}

    def conversation(self, name: str) -> str:
        conversation = self.listed()[name]["conversationId"]
        assert isinstance(conversation, str), self.listed()[name]
        return conversation

    def prompts(self, conversation: str) -> list[str]:
        return [p.text for p in fake_agent.read_prompts(self.agent_dir, conversation)]

    def wait_prompts(self, conversation: str, count: int, timeout: float = 15) -> list[str]:
        wait_until(
            lambda: len(self.prompts(conversation)) >= count,
            timeout=timeout,
            what=f"{count} prompts in {conversation}",
        )
        return self.prompts(conversation)

    def starts(self, conversation: str) -> list[fake_agent.StartRecord]:
        return fake_agent.read_starts(self.agent_dir, conversation)

    def wait_starts(self, conversation: str, count: int) -> list[fake_agent.StartRecord]:
        """The start records of CONVERSATION, once there are at least COUNT."""
        wait_until(
            lambda: len(self.starts(conversation)) >= count,
            what=f"{count} starts of {conversation}",
        )
        return self.starts(conversation)

    def first_start(self, conversation: str) -> fake_agent.StartRecord:
        return self.wait_starts(conversation, 1)[0]

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.env.socket, *args], capture_output=True, text=True, check=False
        )

    def sessions(self) -> list[str]:
        """The tmux sessions on this installation's socket (none when no server runs)."""
        return self.tmux("list-sessions", "-F", "#{session_name}").stdout.split()

    def has_session(self, target: str) -> bool:
        return self.tmux("has-session", "-t", f"={target}").returncode == 0

    def events(self, pattern: str) -> list[dict[str, Any]]:
        result = self.ok("events", "--type", pattern, "--format", "json", "--limit", "1000")
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    def ctx(self) -> Ctx:
        """A service context on this installation (what the daemon would hold)."""
        return open_ctx(loaded=load_config(self.env.config_path))


@pytest.fixture
def st(loop_env: Env, cli: Any) -> Iterator[Standing]:
    agent_dir = loop_env.root / "agents"
    agent_dir.mkdir()
    standing = Standing(loop_env, agent_dir, cli)
    standing.configure(declared=[{"name": "supervisor", "prompt": "watch the queue"}])
    yield standing


def alive(pid: int) -> bool:
    """True while PID names a running (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")
