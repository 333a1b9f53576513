"""Codex's composer read at any width (decision 0107): the real Codex CLI (pinned) under the
daemon, in real tmux, against the fake Responses API, in a window as narrow as a phone's
terminal (an agent's window follows its viewer, decision 0042). There Codex leaves the
``? for shortcuts`` hint out of its footer once it has more to say, as it does at any width
while its composer holds text: a daemon that has not seen the agent ready yet (just
restarted) still delivers to it, a message waits behind a person's draft in the composer and
arrives on its own, and one that comes while a person left the composer in shell mode waits
too, and reaches the model instead of running as a shell command."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.attention.test_claude_submit import say_held, type_draft
from tests.daemon import Daemon, served
from tests.fakes.fake_openai import FakeOpenAI
from tests.harness.agent_clis import REPO
from tests.helpers import wait_until
from tests.work import Work

CODEX_BIN = REPO / "node_modules" / ".bin" / "codex"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(240),
    pytest.mark.skipif(not CODEX_BIN.exists(), reason=f"no Codex CLI at {CODEX_BIN}"),
]
REF = "local:codex-phone"


@pytest.fixture
def codex(work: Work) -> Iterator[tuple[Daemon, FakeOpenAI]]:
    """Codex, pointed at the fake, as the default harness, in a 48-column window."""
    with FakeOpenAI() as api:
        env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
        work.configure(
            harnesses={"codex": {"binary": str(CODEX_BIN), "env": env}},
            routing={"defaultHarness": "codex"},
            tmux={"windowSize": "48x30"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api


def prompts_with(api: FakeOpenAI, mark: str) -> list[str]:
    """The newest user prompt of each conversation turn that holds MARK."""
    return [prompt for prompt in api.user_prompts() if mark in prompt]


def screen(work: Work, target: str) -> str:
    return work.tmux("capture-pane", "-p", "-t", f"={target}:").stdout


def first_turn(work: Work, api: FakeOpenAI, mark: str) -> str:
    """Start the agent with a first message marked MARK, see its turn over; its target."""
    assert work.cli("sessions", "start", REF, "--prompt", f"{mark} first").exit_code == 0
    wait_until(lambda: prompts_with(api, mark), 60, what="the first turn")
    wait_until(lambda: work.attention(REF).get("state") == "waiting", 60, what="its turn over")
    target = str(work.session_json(REF)["tmuxTarget"])
    wait_until(
        lambda: "for shortcuts" not in screen(work, target), 30, what="a footer without the hint"
    )
    return target


def test_a_restarted_daemon_delivers_to_a_codex_in_a_narrow_window(
    work: Work, codex: tuple[Daemon, FakeOpenAI]
) -> None:
    daemon, api = codex
    first_turn(work, api, "KILO-1")
    daemon.stop()  # the next daemon has not seen it ready: it waits for its composer
    daemon.start()
    said = work.cli("sessions", "say", REF, "-t", "LIMA-2 second\n\nin two paragraphs")
    assert said.exit_code == 0, said.stderr
    wait_until(lambda: prompts_with(api, "LIMA-2"), 30, what="the message after the restart")
    unsent = work.events("session.unsent")
    assert not unsent, unsent  # seen to leave the composer at once: no Enter again, no warning


def test_a_message_to_codex_waits_behind_a_draft_and_out_of_shell_mode(
    work: Work, codex: tuple[Daemon, FakeOpenAI]
) -> None:
    daemon, api = codex
    target = first_turn(work, api, "MIKE-1")

    type_draft(work, target, "NOVEMBER typed by a person")
    say_held(daemon, REF, "OSCAR-2 second")
    assert not prompts_with(api, "OSCAR-2")
    work.tmux("send-keys", "-t", f"={target}:", "Enter")  # the person sends it
    mine = wait_until(lambda: prompts_with(api, "NOVEMBER"), 60, what="the person's draft")
    assert mine[0].strip() == "NOVEMBER typed by a person", mine
    theirs = wait_until(lambda: prompts_with(api, "OSCAR-2"), 60, what="the held message")
    assert "NOVEMBER" not in theirs[0] and theirs[0].strip().endswith("OSCAR-2 second"), theirs
    wait_until(lambda: work.attention(REF).get("state") == "waiting", 60, what="its answer")

    work.tmux("send-keys", "-t", f"={target}:", "-l", "!")  # shell mode: a command would run
    wait_until(lambda: "Shell mode" in screen(work, target), 15, what="shell mode")
    say_held(daemon, REF, "PAPA-3 echo $((6007*7))")
    work.tmux("send-keys", "-t", f"={target}:", "BSpace")  # the person leaves shell mode
    sent = wait_until(lambda: prompts_with(api, "PAPA-3"), 60, what="the message at the model")
    assert sent[0].strip().endswith("PAPA-3 echo $((6007*7))"), sent
    # not "42": the screen's clock says 02:42 at that minute
    assert "You ran" not in screen(work, target) and "42049" not in screen(work, target)
    reasons = [e["payload"]["reason"] for e in work.events("session.held")]
    assert len([r for r in reasons if "unsent text" in r]) == 2, reasons
