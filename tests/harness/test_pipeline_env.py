"""An agent runs in a terminal someone may watch, never as a pipeline (decision 0103): an
interactive launch inherits no ``CI``, ``CONTINUOUS_INTEGRATION`` or ``CI_*`` variable, so a
the-loop started on a machine that has them (a CI runner, a container image that sets ``CI``)
still shows Claude Code and Gemini in colour. Before, Claude Code drew its screen without a
single colour there, and Gemini (given ``CI=false`` to start at all) drew none anywhere, so a
person watching saw a plain screen and the draft rule (decision 0101) could not tell a hint
from typed text."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_gemini import FakeGemini
from tests.harness.agent_clis import CLAUDE_BIN
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.config import HarnessConfig
from the_loop.harness import LaunchSpec, build_adapter
from the_loop.runner.sandbox import past_env

U = "00000000-0000-0000-0000-000000000001"
PIPELINE = {"CI": "true", "CONTINUOUS_INTEGRATION": "1", "CI_JOB_ID": "7"}
JOB = {**PIPELINE, "TERM": "dumb"}
"""A daemon started by a CI job, or from a terminal that draws nothing."""
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-7]|38;5;\d+|38;2;[\d;]+)m")


@pytest.mark.parametrize("harness", ["claude", "codex", "gemini"])
def test_an_interactive_launch_inherits_no_pipeline_marker(
    harness: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI_PIPELINE_ID", "41")
    adapter = build_adapter(harness, HarnessConfig(env={"CI_KEEP": "mine"}))
    spec = LaunchSpec(tmp_path, U if adapter.chooses_session_id else None)
    launch = adapter.interactive(spec)
    assert launch.unset_env == ("CI", "CI_PIPELINE_ID", "CONTINUOUS_INTEGRATION")
    assert "CI_KEEP" in launch.env  # what the harness's own env sets is kept
    command = launch.command
    assert command[0].endswith("env") and command[-len(launch.argv) :] == list(launch.argv)
    assert command[1:7] == ["-u", "CI", "-u", "CI_PIPELINE_ID", "-u", "CONTINUOUS_INTEGRATION"]
    assert past_env(command) == list(launch.argv)  # the program the runner checks is there
    resumed = adapter.resume_interactive(LaunchSpec(tmp_path, U))
    assert resumed.unset_env == launch.unset_env
    headless = adapter.headless(LaunchSpec(tmp_path, spec.session_id, "fix it"))
    assert headless.unset_env == () and headless.command == list(headless.argv)


def test_a_harness_that_sets_ci_itself_keeps_it(tmp_path: Path) -> None:
    adapter = build_adapter("gemini", HarnessConfig(env={"CI": "1"}))
    launch = adapter.interactive(LaunchSpec(tmp_path, U))
    assert launch.unset_env == ("CONTINUOUS_INTEGRATION",) and launch.env["CI"] == "1"


def pane_state(work: Work, ref: str) -> tuple[str, dict[str, str]]:
    """REF's agent screen with its escapes, and the environment its pane's program holds."""
    target = work.session_json(ref)["tmuxTarget"]
    screen = work.tmux("capture-pane", "-p", "-e", "-t", f"={target}:").stdout
    raw = Path(f"/proc/{work.pane_pid(target)}/environ").read_bytes().split(b"\0")
    env = dict(item.decode().split("=", 1) for item in raw if b"=" in item)
    return screen, env


def assert_not_a_pipeline(work: Work, ref: str) -> None:
    screen, env = pane_state(work, ref)
    assert COLOUR.search(screen), f"no colour on the agent's screen:\n{screen!r}"
    assert not set(PIPELINE) & set(env), sorted(set(PIPELINE) & set(env))
    assert env.get("TERM") == "tmux-256color", env.get("TERM")  # the terminal it draws in


def claude(work: Work) -> tuple[AbstractContextManager[Any], Callable[[Any], dict[str, str]]]:
    """The fake Messages API, and the environment that points Claude Code at it."""
    home = {"HOME": str(work.env.root / "home")}
    return FakeAnthropic(), lambda api: {**api.claude_env(work.env.root / "claude"), **home}


def gemini(work: Work) -> tuple[AbstractContextManager[Any], Callable[[Any], dict[str, str]]]:
    """The fake Gemini API, and the environment that points Gemini at it."""
    return FakeGemini(), lambda api: api.gemini_env(work.env.root / "gemini")


@pytest.mark.slow
@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    ("harness", "binary", "fake"),
    [
        pytest.param("claude", CLAUDE_BIN, claude, marks=pytest.mark.claude, id="claude"),
        pytest.param("gemini", GEMINI_BIN, gemini, id="gemini"),
    ],
)
def test_an_agent_started_by_a_daemon_on_a_ci_machine_draws_in_colour(
    work: Work, harness: str, binary: Path, fake: Callable[[Work], Any]
) -> None:
    if not binary.exists():
        pytest.skip(f"no {harness} CLI at {binary}")
    server, env_of = fake(work)
    with server as api:
        work.configure(
            harnesses={harness: {"binary": str(binary), "env": env_of(api)}},
            routing={"defaultHarness": harness},
        )
        ref = f"local:ci-{harness}"
        with served(work, **JOB) as daemon:
            said(work, daemon, ref, "ECHO-CI first", api.user_prompts)
            assert_not_a_pipeline(work, ref)


def said(
    work: Work, daemon: Daemon, ref: str, prompt: str, prompts: Callable[[], list[str]]
) -> None:
    """Start REF with PROMPT and see it reach the model (PROMPTS: the fake's user prompts)."""
    started = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": prompt})
    assert started.status_code in (200, 201, 202), started.text
    wait_until(lambda: any(prompt in p for p in prompts()), 120, what=f"{prompt!r} at the model")
