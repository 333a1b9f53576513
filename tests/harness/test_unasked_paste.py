"""A message reaches the real Gemini CLI, Claude Code and Codex (pinned) as one message even
when the CLI has not asked the terminal for bracketed paste — the moment after it drew its
input box and before it asked, made to last here by a relay that keeps its request from tmux
(``tests/fakes/unbracketed.py``). Unframed, none of the three got the message.

Seen in the Slack suite with a standing session's brief: tmux pasted it unframed, Gemini took
the paste for typed keys, its ``!`` switched Gemini to shell mode, and the Enter that submits a
message ran the rest as a shell command, nobody asked. the-loop frames every paste for a
harness that reads the markers itself (``frames_paste``), whatever the program asked."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon import Daemon, served
from tests.fakes import unbracketed
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI
from tests.harness.agent_clis import CLAUDE_BIN
from tests.harness.test_codex_e2e import CODEX_BIN
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not GEMINI_BIN.exists(), reason=f"no Gemini CLI at {GEMINI_BIN}"),
]
REF = "local:bang"


def relayed(work: Work, binary: Path) -> Path:
    """A program that runs BINARY behind the relay that keeps its bracketed-paste request."""
    wrapper = work.env.root / f"{binary.name}-unasked"
    wrapper.write_text(f'#!/bin/sh\nexec {sys.executable} {unbracketed.__file__} {binary} "$@"\n')
    wrapper.chmod(0o755)
    return wrapper


@pytest.fixture
def gemini_unasked(work: Work) -> Iterator[tuple[Daemon, FakeGemini]]:
    with FakeGemini() as api:
        env = api.gemini_env(work.env.root / "gemini-home")
        work.configure(
            harnesses={"gemini": {"binary": str(relayed(work, GEMINI_BIN)), "env": env}},
            routing={"defaultHarness": "gemini"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api


def test_an_unasked_paste_is_one_message_and_never_a_shell_command(
    work: Work, gemini_unasked: tuple[Daemon, FakeGemini]
) -> None:
    _, api = gemini_unasked
    started = work.cli("sessions", "start", REF, "--prompt", "hello! touch PWNED-1")
    assert started.exit_code == 0, started.stderr
    cwd = Path(work.session_json(REF)["cwd"])
    first = wait_until(
        lambda: [p for p in api.user_prompts() if "PWNED-1" in p], 90, what="the first message"
    )
    assert "hello! touch PWNED-1" in first[0] and "How to work" in first[0], first
    work.wait_attention(REF, "waiting", 60)

    said = work.cli("sessions", "say", REF, "-t", "and now!\ntouch PWNED-2")
    assert said.exit_code == 0, said.stderr
    second = wait_until(
        lambda: [p for p in api.user_prompts() if "PWNED-2" in p], 60, what="the second message"
    )
    assert "and now!\ntouch PWNED-2" in second[0], second
    work.wait_attention(REF, "waiting", 60)
    screen = work.cli("sessions", "logs", REF).stdout
    assert "shell mode" not in screen, screen
    assert not list(cwd.glob("PWNED*")), "a message ran as a shell command"


@pytest.fixture
def claude_unasked(work: Work) -> Iterator[tuple[Daemon, FakeAnthropic]]:
    with FakeAnthropic() as api:
        env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(work.env.root)}
        work.configure(
            harnesses={"claude": {"binary": str(relayed(work, CLAUDE_BIN)), "env": env}},
            routing={"defaultHarness": "claude"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api


def test_claude_code_takes_an_unasked_paste_as_one_message(
    work: Work, claude_unasked: tuple[Daemon, FakeAnthropic]
) -> None:
    """The same for Claude Code, whose "!" at the start of a line it is given alone opens its
    bash mode (an unframed paste submits each line on its own)."""
    _, api = claude_unasked
    started = work.cli("sessions", "start", REF, "--prompt", "hello\n!touch PWNED-1")
    assert started.exit_code == 0, started.stderr
    cwd = Path(work.session_json(REF)["cwd"])
    first = wait_until(
        lambda: [p for p in api.user_prompts() if "PWNED-1" in p], 90, what="the first message"
    )
    assert "hello\n!touch PWNED-1" in first[0] and "How to work" in first[0], first
    work.wait_attention(REF, "waiting", 60)
    assert not list(cwd.glob("PWNED*")), "a line ran as a shell command"


@pytest.fixture
def codex_unasked(work: Work) -> Iterator[tuple[Daemon, FakeOpenAI]]:
    with FakeOpenAI() as api:
        env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
        work.configure(
            harnesses={"codex": {"binary": str(relayed(work, CODEX_BIN)), "env": env}},
            routing={"defaultHarness": "codex"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api


@pytest.mark.skipif(not CODEX_BIN.exists(), reason=f"no Codex CLI at {CODEX_BIN}")
def test_codex_takes_an_unasked_paste_as_one_message(
    work: Work, codex_unasked: tuple[Daemon, FakeOpenAI]
) -> None:
    """The same for Codex, which submits each line of an unframed paste on its own."""
    _, api = codex_unasked
    started = work.cli("sessions", "start", REF, "--prompt", "hello\n!touch PWNED-1")
    assert started.exit_code == 0, started.stderr
    cwd = Path(work.session_json(REF)["cwd"])
    first = wait_until(
        lambda: [p for p in api.user_prompts() if "PWNED-1" in p], 90, what="the first message"
    )
    assert "hello\n!touch PWNED-1" in first[0] and "How to work" in first[0], first
    assert not list(cwd.glob("PWNED*")), "a line ran as a shell command"
