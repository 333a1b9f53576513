"""The real Gemini CLI (pinned in package.json) against the fake Gemini API on loopback
(``GOOGLE_GEMINI_BASE_URL``): headless through `the-loop dispatch` (spawn with the id the-loop
minted, follow-up = `gemini --resume <that id>`, each run's usage metered from its
stream-json), and interactive in tmux (spawn past the folder-trust question with
`--skip-trust`, paste, terminate, `gemini --resume <id>`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes import payloads as P
from tests.fakes.fake_gemini import FakeGemini
from tests.harness.agent_clis import REPO, start_interactive
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent import submit
from the_loop.agent.spend import meter, usage
from the_loop.config import HarnessConfig
from the_loop.context import open_ctx
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.runner.tmux import Probe, TmuxRunner

GEMINI_BIN = REPO / "node_modules" / ".bin" / "gemini"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(
        not GEMINI_BIN.exists(), reason=f"Gemini CLI not installed at {GEMINI_BIN} (make setup)"
    ),
]
REF = "github:octo/repo#15"
TARGET = "loop-gemini-e2e"


@pytest.fixture
def api() -> Iterator[FakeGemini]:
    with FakeGemini() as fake:
        yield fake


def test_gemini_headless_spawn_and_follow_up_through_the_loop(work: Work, api: FakeGemini) -> None:
    env = api.gemini_env(work.env.root / "gemini-home")
    work.env.write_config(  # no `binary`: the pinned CLI is found in node_modules/.bin
        harnesses={"gemini": {"env": env}},
        routing={"defaultHarness": "gemini", "authorizedUsers": ["alice"], "runner": "process"},
    )
    comment = P.issue_comment_event("the-loop do count the stars")
    first = work.dispatch("issue_comment", comment, "gm-1", subprocess_cli=True)
    assert first.exit_code == 0 and "spawned" in first.stdout, first.stdout + first.stderr
    assert any("count the stars" in p for p in api.user_prompts()), api.user_prompts()
    shown = work.session_json(REF)
    assert shown["harnessSessionId"] == shown["id"]  # the id the-loop minted, kept by gemini

    comment = P.issue_comment_event("also the planets")
    follow = work.dispatch("issue_comment", comment, "gm-2", subprocess_cli=True)
    assert follow.exit_code == 0 and "delivered 1" in follow.stdout, follow.stdout
    last = api.conversation_turns()[-1].user_texts()
    assert len(last) == 2 and "count the stars" in last[0] and "also the planets" in last[1]
    exited = work.events("session.exited")
    assert [e["payload"]["exitCode"] for e in exited] == [0, 0], exited
    # each run's figures, every request of it (the side requests too), from its stream-json
    ctx = open_ctx(work.env.config_path)
    assert meter.meter_agents(ctx, [shown["id"]]) == [shown["id"]]
    got = usage.of_agent(ctx, shown["id"])
    answered = [r for r in api.snapshot() if r.action.endswith("enerateContent")]
    assert (got.turns, got.input_tokens, got.models) == (2, 10 * len(answered), ["gemini-fake"])
    assert got.output_tokens > 0


def deliver(runner: TmuxRunner, prompt: str) -> None:
    """Paste PROMPT as the-loop does for gemini: framed, its Enter after the submit gap, and
    Enter again while it stays in the input box (a loaded host can lose the first)."""
    gemini = build_adapter("gemini")
    runner.deliver(TARGET, prompt, gemini.submit_gap, gemini.frames_paste).unwrap()
    assert submit.see_submitted(runner, TARGET, gemini, prompt).left, "still in the input box"


def say(runner: TmuxRunner, api: FakeGemini, prompt: str) -> None:
    """Paste PROMPT as the-loop does for gemini (the Enter after the adapter's submit gap) and
    wait until its turn was answered on screen."""
    before = len(api.conversation_turns())
    deliver(runner, prompt)
    try:
        wait_until(lambda: len(api.conversation_turns()) > before, 60, what="the turn")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; screen:\n{runner.capture(TARGET).unwrap().text}") from None
    reply = f"FAKE-GEMINI-REPLY-{api.conversation_turns()[before].seq}"
    wait_until(lambda: idle_after(runner, reply), 60, what=f"{reply}, then an idle input box")


def idle_after(runner: TmuxRunner, reply: str) -> bool:
    """REPLY is on screen and the turn is over (the footer is back): a message pasted while
    Gemini still finishes a turn can stay in its input box (see docs/harnesses.md)."""
    screen = runner.capture(TARGET, 60).unwrap().text
    return reply in screen and "? for shortcuts" in screen.split(reply, 1)[1]


def test_gemini_interactive_spawn_deliver_terminate_resume(
    api: FakeGemini, runner: TmuxRunner, tmp_path: Path
) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    env = api.gemini_env(tmp_path / "gemini-home")
    adapter = build_adapter("gemini", HarnessConfig(binary=str(GEMINI_BIN), env=env))
    session_id = str(uuid.uuid4())
    spec = LaunchSpec(workspace, session_id)
    prompts = ["first: say hi to \"$USER\" and 'quote' me", "second: `backticks` $(subshell) ;|&<>"]

    start_interactive(runner, TARGET, adapter, spec, resume=False)
    for prompt in prompts:
        say(runner, api, prompt)

    report = runner.terminate(TARGET, grace=10)
    assert report.signalled and report.survivors == ()
    wait_until(lambda: runner.probe(TARGET) is Probe.DEAD, 30, what="dead pane")

    # as the-loop does: the first message once the ready pattern shows (the input box under
    # the footer; while Gemini shows "Resuming session..." the box is not drawn and a paste
    # then is lost, which is why a wait for the conversation's last answer lost it)
    start_interactive(runner, TARGET, adapter, spec, resume=True)
    say(runner, api, "third, after the resume")
    assert api.conversation_turns()[-1].user_texts() == [*prompts, "third, after the resume"]
