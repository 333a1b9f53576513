"""Fixtures for the runner tests: a private tmux server per test and the fake agent."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import fake_agent
from tests.fakes.tmux_server import private_runner
from tests.helpers import wait_until
from the_loop.runner.tmux import Probe, TmuxRunner


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[TmuxRunner]:
    """A runner on ``-L the-loop-test-<random>`` (120x40 windows); its server is killed after."""
    with private_runner(tmp_path / "work", columns=120, rows=40) as tmux:
        yield tmux


@pytest.fixture
def agent_dir(tmp_path: Path) -> Path:
    path = tmp_path / "agent"
    path.mkdir()
    return path


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "cwd"
    path.mkdir()
    return path


class FakeAgents:
    """Spawns the fake agent in targets of one runner and reads what it recorded."""

    def __init__(self, runner: TmuxRunner, directory: Path, cwd: Path) -> None:
        self.runner = runner
        self.directory = directory
        self.cwd = cwd

    def env(self, **extra: str) -> dict[str, str]:
        return {"FAKE_AGENT_DIR": str(self.directory), **extra}

    def spawn(
        self, target: str, conversation: str, *args: str, ready: bool = True, **env: str
    ) -> int:
        """Spawn the fake agent for CONVERSATION in TARGET; return its pane pid."""
        argv = fake_agent.command("--session-id", conversation, *args)
        result = self.runner.spawn(target, argv, cwd=self.cwd, env=self.env(**env)).unwrap()
        assert result.pane_pid is not None
        if ready:
            assert self.runner.wait_ready(target, fake_agent.READY, timeout=15)
        return result.pane_pid

    def prompts(self, conversation: str) -> list[str]:
        return [p.text for p in fake_agent.read_prompts(self.directory, conversation)]

    def wait_prompts(self, conversation: str, count: int, timeout: float = 15) -> list[str]:
        wait_until(
            lambda: len(self.prompts(conversation)) >= count,
            timeout,
            what=f"{count} prompts in {conversation}",
        )
        return self.prompts(conversation)

    def wait_probe(self, target: str, probe: Probe, timeout: float = 10) -> None:
        wait_until(
            lambda: self.runner.probe(target) is probe, timeout, what=f"{target} to be {probe}"
        )


@pytest.fixture
def agents(runner: TmuxRunner, agent_dir: Path, workdir: Path) -> FakeAgents:
    return FakeAgents(runner, agent_dir, workdir)
