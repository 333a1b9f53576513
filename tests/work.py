"""The `work` fixture: an installation whose harness is the fake agent; payloads on disk."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import CliResult, Env
from tests.fakes import fake_agent
from tests.helpers import wait_until

FAKE = str(fake_agent.SCRIPT)


def fake_harness(agent_dir: Path, **env: str) -> dict[str, Any]:
    return {
        "adapter": "command",
        "interactive": [sys.executable, FAKE, "--session-id", "{session_id}", "--", "{prompt}"],
        "resume": [sys.executable, FAKE, "--resume", "{session_id}", "--", "{prompt}"],
        "env": {"FAKE_AGENT_DIR": str(agent_dir), **env},
    }


@dataclass
class Work:
    """One installation whose default harness is the fake agent."""

    env: Env
    agent_dir: Path
    cli: Any

    def configure(self, harness_env: dict[str, str] | None = None, **sections: Any) -> None:
        routing = {
            "defaultHarness": "fake",
            "authorizedUsers": ["alice"],
            **sections.pop("routing", {}),
        }
        tmux = {"resumeProbeSeconds": 0.5, **sections.pop("tmux", {})}
        self.env.write_config(
            harnesses={
                "fake": fake_harness(self.agent_dir, **(harness_env or {})),
                **sections.pop("harnesses", {}),
            },
            routing=routing,
            tmux=tmux,
            **sections,
        )

    def dispatch(
        self,
        event: str,
        payload: dict[str, Any],
        delivery: str | None = None,
        *,
        subprocess_cli: bool = False,
    ) -> CliResult:
        path = self.env.root / f"payload-{uuid.uuid4().hex}.json"
        path.write_text(json.dumps(payload))
        args = ["dispatch", "--event", event, str(path)]
        if delivery:
            args += ["--delivery", delivery]
        if subprocess_cli:
            return self.env.run(*args)
        return self.cli(*args)

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.env.socket, *args], capture_output=True, text=True, check=False
        )

    def pane_pid(self, target: str) -> int:
        """The pid of the program in TARGET's pane (the agent's launcher)."""
        shown = self.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_pid}")
        return int(shown.stdout)

    def pane_dead(self, target: str) -> str:
        return self.tmux(
            "display-message", "-p", "-t", f"={target}:", "#{pane_dead}"
        ).stdout.strip()

    def session_json(self, ref: str) -> dict[str, Any]:
        result = self.cli("sessions", "show", ref, "--format", "json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    def attention(self, ref: str) -> dict[str, Any]:
        """``attention explain REF`` as JSON; empty while REF has no attention yet."""
        found = self.cli("attention", "explain", ref, "--format", "json")
        return json.loads(found.stdout) if found.exit_code == 0 else {}  # type: ignore[no-any-return]

    def wait_attention(
        self, ref: str, state: str, timeout: float = 60, signal: str | None = None
    ) -> dict[str, Any]:
        """REF's attention once it is in STATE (waited for), set by SIGNAL when given: a
        turn's ``claude-hook:Stop``, not the start's ``waiting`` that Claude Code's prompt
        report, which it does not wait for, may come after."""

        def reached() -> dict[str, Any] | None:
            a = self.attention(ref)
            if a.get("state") != state or (signal is not None and a.get("signal") != signal):
                return None
            return a

        return wait_until(reached, timeout, what=f"{state} ({signal or 'any signal'})")  # type: ignore[no-any-return]

    def prompts(self, conversation: str) -> list[str]:
        return [p.text for p in fake_agent.read_prompts(self.agent_dir, conversation)]

    def wait_prompts(self, conversation: str, count: int, timeout: float = 15) -> list[str]:
        wait_until(
            lambda: len(self.prompts(conversation)) >= count,
            timeout=timeout,
            what=f"{count} prompts in {conversation}",
        )
        return self.prompts(conversation)

    def events(self, pattern: str) -> list[dict[str, Any]]:
        result = self.cli("events", "--type", pattern, "--format", "json", "--limit", "1000")
        return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def work(loop_env: Env, cli: Any) -> Iterator[Work]:
    agent_dir = loop_env.root / "agents"
    agent_dir.mkdir()
    w = Work(loop_env, agent_dir, cli)
    w.configure()
    yield w
