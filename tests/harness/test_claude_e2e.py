"""The real Claude Code CLI in tmux against the fake Anthropic API: spawn, paste delivery,
terminate and ``--resume`` proved end to end."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.prompts import nasty_prompt
from tests.harness.agent_clis import CLAUDE_BIN, start_interactive
from tests.helpers import wait_until
from the_loop.config import HarnessConfig
from the_loop.harness import HarnessAdapter, LaunchSpec, build_adapter
from the_loop.runner.tmux import Probe, TmuxRunner

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
]
TARGET = "loop-claude-e2e"


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


def claude_adapter(api: FakeAnthropic, tmp_path: Path) -> HarnessAdapter:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**api.claude_env(tmp_path / "claude-config"), "HOME": str(home)}
    return build_adapter("claude", HarnessConfig(binary=str(CLAUDE_BIN), env=env))


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

    start_interactive(runner, TARGET, adapter, spec, resume=False, timeout=90)
    for prompt in prompts:
        say(runner, api, prompt)
    assert api.user_prompts() == prompts

    report = runner.terminate(TARGET, grace=10)
    assert report.signalled and report.survivors == ()
    wait_until(lambda: runner.probe(TARGET) is Probe.DEAD, 30, what="dead pane")
    assert TARGET in (runner.list_targets() or [])

    start_interactive(runner, TARGET, adapter, spec, resume=True, timeout=90)
    say(runner, api, "fourth, after the resume")
    last = api.last_conversation_request()
    assert last is not None
    assert last.user_texts() == [*prompts, "fourth, after the resume"]
    assert last.body["metadata"]["user_id"].count(session_id) == 1
