"""The real Claude Code CLI in tmux against the fake Anthropic API: spawn, paste delivery,
terminate and ``--resume`` proved end to end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.prompts import nasty_prompt
from tests.fakes.tmux_server import private_runner
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from the_loop.config import HarnessConfig
from the_loop.harness import HarnessAdapter, LaunchSpec, build_adapter
from the_loop.runner.tmux import Probe, TmuxRunner

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CLAUDE_BIN.exists(),
        reason=f"Claude Code CLI not installed at {CLAUDE_BIN} (run `make setup`)",
    ),
]
TARGET = "loop-claude-e2e"


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[TmuxRunner]:
    with private_runner(tmp_path / "work", columns=160, rows=50) as tmux:
        yield tmux


def claude_adapter(api: FakeAnthropic, tmp_path: Path) -> HarnessAdapter:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**api.claude_env(tmp_path / "claude-config"), "HOME": str(home)}
    return build_adapter("claude", HarnessConfig(binary=str(CLAUDE_BIN), env=env))


def start(runner: TmuxRunner, adapter: HarnessAdapter, spec: LaunchSpec, resume: bool) -> None:
    launch = adapter.resume_interactive(spec) if resume else adapter.interactive(spec)
    adapter.prepare(launch)
    runner.spawn(TARGET, launch.argv, cwd=launch.cwd, env=launch.env).unwrap()
    assert runner.wait_ready(TARGET, launch.ready_pattern, timeout=90), (
        runner.capture(TARGET).unwrap().text
    )


def say(runner: TmuxRunner, api: FakeAnthropic, prompt: str) -> None:
    """Deliver PROMPT and wait until its request was answered on screen."""
    before = len(api.conversation_requests())
    runner.deliver(TARGET, prompt).unwrap()
    wait_until(lambda: len(api.conversation_requests()) > before, 60, what="the request")
    reply = f"FAKE-REPLY-{api.conversation_requests()[before].seq}"
    wait_until(lambda: reply in runner.capture(TARGET, 60).unwrap().text, 60, what=reply)


def test_spawn_deliver_terminate_resume(
    api: FakeAnthropic, runner: TmuxRunner, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    adapter = claude_adapter(api, tmp_path)
    session_id = str(uuid.uuid4())
    spec = LaunchSpec(workspace, session_id)
    prompts = [
        "first: say hi to \"$USER\" and 'quote' me",
        nasty_prompt(300, seed=11),
        "third: `backticks` \\backslash\\ $(subshell) ;|&<>*?#!~",
    ]
    assert len(prompts[1].encode()) > 20_000

    start(runner, adapter, spec, resume=False)
    for prompt in prompts:
        say(runner, api, prompt)
    assert api.user_prompts() == prompts

    report = runner.terminate(TARGET, grace=10)
    assert report.signalled and report.survivors == ()
    wait_until(lambda: runner.probe(TARGET) is Probe.DEAD, 30, what="dead pane")
    assert TARGET in (runner.list_targets() or [])

    start(runner, adapter, spec, resume=True)
    say(runner, api, "fourth, after the resume")
    last = api.last_conversation_request()
    assert last is not None
    assert last.user_texts() == [*prompts, "fourth, after the resume"]
    assert last.body["metadata"]["user_id"].count(session_id) == 1
