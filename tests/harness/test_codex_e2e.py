"""The real Codex CLI (pinned in package.json) against the fake OpenAI Responses API on
loopback: headless through `the-loop dispatch` (spawn, follow-up = `codex exec resume`), and
interactive in tmux (spawn past the folder-trust question, paste, terminate, `codex resume`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import payloads as P
from tests.fakes.fake_openai import FakeOpenAI
from tests.harness.agent_clis import REPO, start_interactive
from tests.helpers import wait_until
from tests.work import Work
from the_loop.config import HarnessConfig
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.runner.tmux import Probe, TmuxRunner

CODEX_BIN = REPO / "node_modules" / ".bin" / "codex"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not CODEX_BIN.exists(), reason=f"Codex CLI not installed at {CODEX_BIN} (make setup)"
    ),
]
REF = "github:octo/repo#15"
TARGET = "loop-codex-e2e"


@pytest.fixture
def api() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def test_codex_headless_spawn_and_follow_up_through_the_loop(work: Work, api: FakeOpenAI) -> None:
    env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
    work.env.write_config(  # no `binary`: the pinned CLI is found in node_modules/.bin
        harnesses={"codex": {"env": env, "args": ["--skip-git-repo-check"]}},
        routing={"defaultHarness": "codex", "authorizedUsers": ["alice"], "runner": "process"},
    )
    first = work.dispatch(
        "issue_comment",
        P.issue_comment_event("the-loop do count the stars"),
        "cx-1",
        subprocess_cli=True,
    )
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    assert any("count the stars" in p for p in api.user_prompts()), api.user_prompts()
    thread = work.session_json(REF)["harnessSessionId"]
    assert isinstance(thread, str) and len(thread) == 36, thread  # codex's own thread id

    follow = work.dispatch(
        "issue_comment", P.issue_comment_event("also the planets"), "cx-2", subprocess_cli=True
    )
    assert follow.exit_code == 0 and "delivered 1" in follow.stdout, follow.stdout
    last = api.conversation_turns()[-1].user_texts()
    assert len(last) == 2 and "count the stars" in last[0] and "also the planets" in last[1]
    assert work.session_json(REF)["harnessSessionId"] == thread
    exited = work.events("session.exited")
    assert [e["payload"]["exitCode"] for e in exited] == [0, 0], exited


def say(runner: TmuxRunner, api: FakeOpenAI, prompt: str) -> None:
    """Paste PROMPT and wait until its turn was answered on screen."""
    before = len(api.conversation_turns())
    runner.deliver(TARGET, prompt).unwrap()
    wait_until(lambda: len(api.conversation_turns()) > before, 60, what="the turn")
    reply = f"FAKE-CODEX-REPLY-{api.conversation_turns()[before].seq}"
    wait_until(lambda: reply in runner.capture(TARGET, 60).unwrap().text, 60, what=reply)


def test_codex_interactive_spawn_deliver_terminate_resume(
    api: FakeOpenAI, runner: TmuxRunner, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    home = tmp_path / "codex-home"
    env = {**api.codex_env(home), "HOME": str(tmp_path / "home")}
    adapter = build_adapter("codex", HarnessConfig(binary=str(CODEX_BIN), env=env))

    start_interactive(runner, TARGET, adapter, LaunchSpec(workspace), resume=False)
    assert 'trust_level = "trusted"' in (home / "config.toml").read_text()
    say(runner, api, "first: say hi to \"$USER\" and 'quote' me")
    say(runner, api, "second: `backticks` $(subshell) ;|&<>")

    report = runner.terminate(TARGET, grace=10)
    assert report.signalled and report.survivors == ()
    wait_until(lambda: runner.probe(TARGET) is Probe.DEAD, 30, what="dead pane")
    (rollout,) = home.glob("sessions/**/rollout-*.jsonl")
    thread = rollout.stem[-36:]  # the interactive id is discovered afterwards (docs)

    start_interactive(runner, TARGET, adapter, LaunchSpec(workspace, thread), resume=True)
    say(runner, api, "third, after the resume")
    assert api.conversation_turns()[-1].user_texts() == [
        "first: say hi to \"$USER\" and 'quote' me",
        "second: `backticks` $(subshell) ;|&<>",
        "third, after the resume",
    ]
