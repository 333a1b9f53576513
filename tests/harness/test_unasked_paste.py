"""A message reaches the real Gemini CLI, Claude Code and Codex (pinned) as one message even
when the CLI has not asked the terminal for bracketed paste — the moment after it drew its
input box and before it asked, made to last here by a relay that keeps its request from tmux
(``tests/fakes/unbracketed.py``). Unframed, none of the three got the message.

Seen in the Slack suite with a standing session's brief: tmux pasted it unframed, Gemini took
the paste for typed keys, its ``!`` switched Gemini to shell mode, and the Enter that submits a
message ran the rest as a shell command, nobody asked. the-loop frames every paste for a
harness that reads the markers itself (``frames_paste``), whatever the program asked."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.daemon import served
from tests.fakes import pty_relay, unbracketed
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_gemini import FakeGemini
from tests.fakes.fake_openai import FakeOpenAI
from tests.harness.agent_clis import CLAUDE_BIN
from tests.harness.test_codex_e2e import CODEX_BIN
from tests.harness.test_gemini_e2e import GEMINI_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]
REF = "local:bang"
Prompts = Callable[[], list[str]]


@contextmanager
def unasked(work: Work, harness: str) -> Iterator[Prompts]:
    """A daemon whose HARNESS (the real CLI, behind the relay) answers from its fake API; the
    prompts the fake received."""
    binary = {"gemini": GEMINI_BIN, "claude": CLAUDE_BIN, "codex": CODEX_BIN}[harness]
    if not binary.exists():
        pytest.skip(f"no {harness} CLI at {binary}")
    wrapper = pty_relay.wrapper(work.env.root / f"{harness}-unasked", unbracketed.__file__, binary)
    home = work.env.root / "home"
    with {"gemini": FakeGemini, "claude": FakeAnthropic, "codex": FakeOpenAI}[harness]() as api:
        if isinstance(api, FakeGemini):
            env = api.gemini_env(home)
        elif isinstance(api, FakeAnthropic):
            env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(home)}
        else:
            env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(home)}
        work.configure(
            harnesses={harness: {"binary": str(wrapper), "env": env}},
            routing={"defaultHarness": harness},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work):
            yield api.user_prompts


def arrived(prompts: Prompts, words: str) -> str:
    found = wait_until(lambda: [p for p in prompts() if words in p], 90, what=repr(words))
    return found[0]


def test_gemini_takes_an_unasked_paste_as_one_message_and_never_as_a_shell_command(
    work: Work,
) -> None:
    with unasked(work, "gemini") as prompts:
        assert work.cli("sessions", "start", REF, "--prompt", "hello! touch PWNED-1").exit_code == 0
        cwd = Path(work.session_json(REF)["cwd"])
        first = arrived(prompts, "PWNED-1")
        assert "hello! touch PWNED-1" in first and "How to work" in first, first
        work.wait_attention(REF, "waiting", 60)

        said = work.cli("sessions", "say", REF, "-t", "and now!\ntouch PWNED-2")
        assert said.exit_code == 0, said.stderr
        assert "and now!\ntouch PWNED-2" in arrived(prompts, "PWNED-2")
        work.wait_attention(REF, "waiting", 60)
        screen = work.cli("sessions", "logs", REF).stdout
        assert "shell mode" not in screen, screen
        assert not list(cwd.glob("PWNED*")), "a message ran as a shell command"


@pytest.mark.parametrize("harness", ["claude", "codex"])
def test_a_line_of_an_unasked_paste_is_not_submitted_on_its_own(work: Work, harness: str) -> None:
    """Claude Code and Codex submit each line of an unframed paste on its own (Claude Code's
    "!" at the start of one opens its bash mode)."""
    with unasked(work, harness) as prompts:
        started = work.cli("sessions", "start", REF, "--prompt", "hello\n!touch PWNED-1")
        assert started.exit_code == 0, started.stderr
        cwd = Path(work.session_json(REF)["cwd"])
        first = arrived(prompts, "PWNED-1")
        assert "hello\n!touch PWNED-1" in first and "How to work" in first, first
        assert not list(cwd.glob("PWNED*")), "a line ran as a shell command"
