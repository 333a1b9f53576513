"""An agent runs in a terminal someone may watch, never as a pipeline (decision 0103): an
agent inherits no ``CI``, ``CONTINUOUS_INTEGRATION`` or ``CI_*`` variable and draws in tmux's
terminal, so a the-loop started on a machine that has them (a CI runner, a container image
that sets ``CI``), or from a terminal that draws nothing, still shows Claude Code and Gemini
in colour (the launch script's part: ``tests/runner/test_tmux_spawn.py``). Before, Claude
Code drew its screen without a single colour there, and Gemini (given ``CI=false`` to start at
all) drew none anywhere, so a person watching saw a plain screen and the draft rule (decision
0101) could not tell a hint from typed text."""

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

PIPELINE = {"CI": "true", "CONTINUOUS_INTEGRATION": "1", "CI_JOB_ID": "7"}
JOB = {**PIPELINE, "TERM": "dumb"}
"""A daemon started by a CI job, or from a terminal that draws nothing."""
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-7]|38;5;\d+|38;2;[\d;]+)m")


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
