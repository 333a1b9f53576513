"""A draft of a person's in Claude Code's input box never gets an Enter from the-loop (decision
0100): the real Claude Code (pinned) in real tmux against the fake Messages API. The watch
after a paste presses Enter only on the message it pasted, found in the box by its first or
last letters; a draft or a hint alone is left as it is."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import start_interactive
from tests.harness.test_claude_e2e import claude_adapter
from tests.helpers import wait_until
from the_loop.agent import submit
from the_loop.harness import InputBox, LaunchSpec
from the_loop.runner.tmux import TmuxRunner


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_draft_alone_in_the_box_never_gets_an_enter(
    api: FakeAnthropic, runner: TmuxRunner, tmp_path: Path
) -> None:
    """A person's draft in Claude Code's input box, and a message of the-loop's that never
    reached the box (its paste lost): the watch presses no Enter, for the whole of its
    ``WATCH_SECONDS``, and the draft stays unsent. Enter goes only on the message itself."""
    target = "loop-claude-draft"
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    adapter = claude_adapter(api, tmp_path)
    start_interactive(
        runner, target, adapter, LaunchSpec(workspace, str(uuid.uuid4())), resume=False
    )
    runner.run("send-keys", "-t", f"={target}:", "-l", "my own draft")

    def box() -> InputBox | None:
        return adapter.input_box(runner.capture(target, 60).unwrap().text)

    wait_until(lambda: (b := box()) is not None and b.held == "my own draft", 30, what="draft")
    message = "Message from root (operator) about local:draft:\n\nplease say hello"
    watched = submit.see_submitted(runner, target, adapter, message, lambda: False)
    assert watched == submit.Watched(False, 0)
    assert (shown := box()) is not None and shown.held == "my own draft"
    assert api.conversation_requests() == []
