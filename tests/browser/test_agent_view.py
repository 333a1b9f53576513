"""What a person sees of the real Claude Code (against the fake Messages API) on the session
page, at 1366x768 and on a 390x844 phone: in the Terminal tab, the agent's newest line and its
permission dialog at the bottom of its screen, without scrolling and in whole lines (the
agent's window follows the interactive viewer; a read-only viewer sees the whole window
scaled); in the Conversation tab, the turns from its transcript (prompt, reply, the tool call
with its input and result); at the top of the page, what the agent waits for: a permission,
answered there with Allow and Deny, and a question, answered by a choice or a typed answer."""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.attention.test_claude_question import QUESTION, answer_of
from tests.browser.conftest import CHROMIUM, PHONE, READ_ONLY, axe_problems, shot
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.fakes.fake_anthropic import FakeAnthropic, RecordedRequest, ToolUse
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.browser,
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.xdist_group("browser-agent-view"),
]

DESKTOP: dict[str, Any] = {"viewport": {"width": 1366, "height": 768}}
DIALOG = r"Do you want to proceed\?"
DIALOG_END = r"Esc to cancel"
"""The last line of Claude Code's permission dialog, at the bottom of its screen."""
REPLY_LINES = 60
LONG_NOTES = "".join(f"note {k}: a line of notes that goes on for a while\n" for k in range(60))
"""A file's content longer than a phone's screen, in a Write call's input."""
"""A reply longer than any screen here: its newest line is at the bottom of the agent's."""


def reply(request: RecordedRequest) -> str | ToolUse:
    """A long answer to a prompt; a Bash call for RUN-TOOL-N; DONE after a tool's result."""
    if not request.is_conversation:
        return "a title"
    if request.answers_a_tool:
        return f"DONE-AFTER-TOOL-{request.seq}"
    prompt = request.prompt or ""
    if "WRITE-LONG" in prompt:
        return ToolUse("Write", {"file_path": "notes.md", "content": LONG_NOTES}, "toolu_write")
    for n in (1, 2):
        if f"RUN-TOOL-{n}" in prompt:
            command = f"echo ran-{n} > tool-{n}.txt"
            return ToolUse("Bash", {"command": command, "description": f"tool {n}"}, f"toolu_{n}")
        if f"ASK-ME-{n}" in prompt:
            return ToolUse("AskUserQuestion", QUESTION, f"toolu_ask_{n}")
    body = "\n".join(f"reply line {k} of {REPLY_LINES}" for k in range(1, REPLY_LINES + 1))
    return f"FAKE-REPLY-{request.seq}\n{body}\nNEWEST-LINE-{request.seq}"


@dataclass
class Agent:
    """The daemon, the fake API and the one Claude Code session the tests look at."""

    daemon: Daemon
    work: Work
    api: FakeAnthropic
    sid: str = ""
    target: str = ""
    path: str = ""
    """Its page in the dashboard."""

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.work.tmux(*args)

    def window(self) -> str:
        shown = self.tmux(
            "display-message", "-p", "-t", f"={self.target}:", "#{window_width}x#{window_height}"
        )
        return shown.stdout.strip()

    def attention(self) -> dict[str, Any]:
        found = self.daemon.api("GET", f"/attention/{self.sid}")
        return found.json() if found.status_code == 200 else {}  # type: ignore[no-any-return]

    def wait_state(self, state: str, timeout: float = 90) -> dict[str, Any]:
        return wait_until(  # type: ignore[no-any-return]
            lambda: (a := self.attention()).get("state") == state and a,
            timeout,
            what=f"attention {state}",
        )

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", f"={self.target}:").stdout

    def wait_screen(self, pattern: str, timeout: float = 60) -> None:
        wait_until(lambda: re.search(pattern, self.screen()), timeout, what=pattern)

    def say(self, text: str) -> None:
        sent = self.daemon.api("POST", f"/sessions/{self.sid}/messages", json={"text": text})
        assert sent.status_code == 200, sent.text

    def asked(self, text: str, say: Callable[[str], None] | None = None) -> None:
        """Once its first long reply is on screen, say TEXT (by SAY, else to the session) and
        wait for Claude Code's permission dialog."""
        try:
            self.wait_screen(r"NEWEST-LINE-\d+", 90)
            (say or self.say)(text)
            self.wait_screen(DIALOG, 90)
        except AssertionError:
            raise AssertionError(f"{self.attention()}\n{self.screen()}") from None


@contextmanager
def claude_daemon(root: Path, **sections: Any) -> Iterator[tuple[Daemon, Work, FakeAnthropic]]:
    """A daemon in ROOT whose default harness is the real Claude Code against the fake Messages
    API (``reply``), with SECTIONS of config more; stopped and its tmux server ended after."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make setup` installs chromium")
    (root / "home").mkdir()
    (root / "agents").mkdir()
    env = Env(
        root=root,
        state_dir=root / "state",
        config_path=root / "the-loop.yaml",
        socket=f"the-loop-test-{uuid.uuid4().hex[:10]}",
    )
    work = Work(env, root / "agents", cli=None)
    with FakeAnthropic(reply=reply) as api:
        claude = {**api.claude_env(root / "claude-config"), "HOME": str(root / "home")}
        work.configure(
            harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": claude}},
            routing={"defaultHarness": "claude"},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
            **sections,
        )
        daemon = Daemon(work)
        daemon.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
        try:
            yield daemon, work, api
        finally:
            daemon.stop()
            subprocess.run(["tmux", "-L", env.socket, "kill-server"], capture_output=True)
            shutil.rmtree(root / "agents", ignore_errors=True)


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    """Claude Code on issue 51, its first reply in and a permission for RUN-TOOL-1 pending."""
    root = tmp_path_factory.mktemp("claude-site")
    with claude_daemon(root, github={"enabled": True}) as (daemon, work, api):
        found = Agent(daemon, work, api)
        body = P.issue_comment_event("the-loop start", number=51)
        sent = daemon.post("issue_comment", body, f"agent-view-{uuid.uuid4().hex[:6]}")
        assert sent.status_code == 202, sent.text
        rec = wait_until(
            lambda: (
                (r := daemon.api("GET", "/sessions/github:octo/repo%2351")).status_code == 200
                and r.json()
            ),
            60,
            what="the session",
        )
        found.sid, found.target = rec["id"], rec["tmuxTarget"]
        found.path = f"/sessions/{found.sid}"
        found.asked("please RUN-TOOL-1 now")
        yield found


VISIBLE_ROWS = """() => {
  const t = window.theLoopTerminal, b = t.buffer.active, out = [];
  for (let i = b.viewportY; i < b.viewportY + t.rows; i++)
    out.push(b.getLine(i)?.translateToString(true) ?? '');
  return out;
}"""


def visible_rows(page: Page) -> list[str]:
    """The rows the terminal shows now (not its scrollback)."""
    return [str(row) for row in page.evaluate(VISIBLE_ROWS)]


def open_terminal(page: Page) -> None:
    page.get_by_role("tab", name="Terminal").click()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)


def shows(page: Page, pattern: str) -> bool:
    return any(re.search(pattern, row) for row in visible_rows(page))


def rows_fit(page: Page) -> bool:
    """True when every row of the terminal lies inside its box (none hidden below it)."""
    return bool(
        page.evaluate(
            "() => { const box = document.getElementById('terminal').getBoundingClientRect();"
            " const rows = document.querySelector('#terminal .xterm-screen')"
            ".getBoundingClientRect();"
            " return rows.bottom <= box.bottom + 0.5 && rows.right <= box.right + 0.5; }"
        )
    )


def in_viewport(page: Page, selector: str) -> bool:
    """True when SELECTOR's box lies inside the page's viewport as it is (no scrolling)."""
    box = page.locator(selector).bounding_box()
    size = page.viewport_size
    assert box is not None and size is not None
    return box["y"] >= 0 and box["y"] + box["height"] <= size["height"] + 0.5


def test_desktop_terminal_shows_the_newest_line_and_the_permission_dialog(
    agent: Agent, open_page: Any
) -> None:
    page = open_page(**DESKTOP)
    open_terminal(page)
    wait_until(lambda: shows(page, DIALOG), 30, what="the permission dialog on screen")
    wait_until(lambda: shows(page, DIALOG_END), 30, what="the dialog's last line on screen")
    wait_until(lambda: shows(page, r"RUN-TOOL-1|echo ran-1"), 30, what="the newest lines")
    assert in_viewport(page, "#terminal")
    assert rows_fit(page)
    cols, rows = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    assert agent.window() == f"{cols}x{rows}"
    assert page.evaluate("() => window.scrollY") == 0
    shot(page, "session")


def test_phone_terminal_shows_whole_lines_and_the_permission_dialog(
    agent: Agent, open_page: Any
) -> None:
    page = open_page(**PHONE)
    open_terminal(page)
    wait_until(lambda: shows(page, DIALOG), 30, what="the permission dialog on a phone")
    wait_until(lambda: shows(page, DIALOG_END), 30, what="the dialog's last line on a phone")
    assert rows_fit(page)
    cols, rows = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    assert cols < 60
    # whole lines: the agent draws for the phone's columns, so no line runs past them
    wait_until(lambda: agent.window() == f"{cols}x{rows}", 30, what="the window follows")
    assert in_viewport(page, "#terminal")
    heading = page.locator("h1").bounding_box()
    assert heading is not None and heading["x"] + heading["width"] <= 390
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    shot(page, "session-phone")


def test_read_only_viewer_sees_the_whole_window_scaled(agent: Agent, open_page: Any) -> None:
    page = open_page(READ_ONLY, **DESKTOP)
    before = agent.window()
    open_terminal(page)
    wait_until(lambda: shows(page, DIALOG_END), 30, what="the dialog for a read-only viewer")
    assert rows_fit(page)
    cols, rows = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    assert f"{cols}x{rows}" == agent.window() == before
    assert in_viewport(page, "#terminal")


def test_conversation_shows_turns_and_answers_the_permission(agent: Agent, open_page: Any) -> None:
    page = open_page(**PHONE)
    conversation = page.locator("#conversation")
    expect(conversation.locator(".turn .prompt").first).to_contain_text("octo/repo#51")
    expect(conversation.locator(".msg").first).to_contain_text("NEWEST-LINE")
    tool = conversation.locator("details.tool").last
    expect(tool.locator(".tool-name")).to_have_text("Bash")
    expect(tool.locator(".tool-input")).to_contain_text("echo ran-1 > tool-1.txt")
    expect(tool.locator(".tool-status")).to_have_text("waiting")
    expect(page.locator(".waiting-now .pending")).to_contain_text("Bash")
    # what the agent waits for, and its answer, are on the first screen of a phone
    assert in_viewport(page, ".waiting-now")
    assert page.evaluate("() => window.scrollY") == 0
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    shot(page, "session-conversation-phone")

    page.get_by_role("button", name=re.compile("^Allow Bash")).click()
    # answered: the prompt leaves the top of the page, the answer's outcome stays there
    expect(page.locator("#live-waiting [data-result]")).to_contain_text("allowed Bash")
    expect(page.locator(".waiting-now")).to_have_count(0)
    expect(tool.locator(".tool-status")).to_have_text("done")
    expect(tool.locator(".tool-result")).not_to_contain_text("no result yet")
    expect(conversation.locator(".msg").last).to_contain_text("DONE-AFTER-TOOL")
    assert (
        Path(agent.daemon.api("GET", f"/sessions/{agent.sid}").json()["cwd"]) / "tool-1.txt"
    ).exists()

    agent.say("now RUN-TOOL-2 please")
    agent.wait_state("needs-permission")
    page.reload()
    expect(page.locator(".waiting-now .pending")).to_contain_text("echo ran-2")
    page.get_by_role("button", name=re.compile("^Deny Bash")).click()
    second = conversation.locator("details.tool").last
    # the dialog can show before Claude Code has written the tool call to its transcript (a
    # loaded run once saw it written only after the answer: 30 s with the dialog open)
    expect(second.locator(".tool-input")).to_contain_text("echo ran-2", timeout=30_000)
    expect(second.locator(".tool-status")).to_have_text("error")
    cwd = Path(agent.daemon.api("GET", f"/sessions/{agent.sid}").json()["cwd"])
    assert not (cwd / "tool-2.txt").exists()


def test_conversation_on_the_desktop(agent: Agent, open_page: Any) -> None:
    page = open_page(**DESKTOP)
    expect(page.locator("#conversation .turn").first).to_be_visible()
    expect(page.locator("#conversation .msg").first).to_contain_text("NEWEST-LINE")
    tools = page.locator("#conversation details.tool")
    expect(tools.first.locator(".tool-name")).to_have_text("Bash")
    shot(page, "session-conversation")


def test_a_question_is_answered_on_the_page_by_a_choice_and_by_typing(
    agent: Agent, open_page: Any
) -> None:
    """Claude Code's question dialog, answered from the phone's page: its choices are buttons,
    and a typed answer goes through its last choice, as `sessions answer` types them."""

    def turn_over() -> bool:
        found = agent.attention()
        return found.get("state") == "waiting" and "DONE-AFTER-TOOL" in found.get("lastMessage", "")

    now = agent.attention()
    if now.get("state") == "needs-permission":  # run alone: the fixture's Bash call still waits
        body = {"decision": "deny", "promptId": now["prompt"]["id"]}
        assert agent.daemon.api("POST", f"/sessions/{agent.sid}/permission", json=body).is_success
    wait_until(turn_over, 60, what="the agent's turn over")
    agent.say("please ASK-ME-1 now")
    asked = agent.wait_state("needs-input")["prompt"]
    assert asked["choices"] == ["SQLite", "PostgreSQL"]
    page = open_page(**PHONE, bypass_csp=True)  # axe is injected below
    page.goto("/attention")  # its card answers it the same way; no reply box, which would hold
    card = page.locator(f"li[data-agent='{agent.sid}']")
    expect(card.get_by_role("button", name=re.compile("^Answer 1. SQLite"))).to_be_visible()
    expect(card.get_by_label(re.compile("^Or type an answer"))).to_be_visible()
    expect(card.get_by_label(re.compile("^Reply to"))).to_have_count(0)
    page.goto(f"/sessions/{agent.sid}")
    waiting = page.locator(".waiting-now")
    expect(waiting.locator(".pending")).to_contain_text("Which database?")
    expect(
        waiting.get_by_role("button", name=re.compile("^Answer 2. PostgreSQL"))
    ).to_be_in_viewport()
    shot(page, "session-question-phone")
    assert axe_problems(page) == []
    waiting.get_by_role("button", name=re.compile("^Answer 2. PostgreSQL")).click()
    expect(page.locator("#live-waiting [data-result]")).to_contain_text("answered 2. PostgreSQL")
    wait_until(lambda: "PostgreSQL" in answer_of(agent.api, "toolu_ask_1"), 30, what="choice 2")
    expect(page.locator(".waiting-now")).to_have_count(0)
    # the tool call's one-line brief is its input flattened, not the JSON's lone first "{";
    # looked at once answered: Claude Code may write a question's call to its transcript only
    # after the dialog is done (seen under load: the page showed the call before it, for 30 s)
    brief = page.locator("#conversation details.tool .tool-brief").last
    expect(brief).to_contain_text('"question": "Which database?"', timeout=30_000)

    wait_until(turn_over, 60, what="the answered question's turn over")
    agent.say("now ASK-ME-2")
    second = agent.wait_state("needs-input")["prompt"]
    expect(page.locator(".waiting-now .pending")).to_contain_text("Which database?")  # live
    page.get_by_label(re.compile("^Or type an answer")).fill("MySQL please")
    page.get_by_role("button", name="Answer", exact=True).click()
    # the page says how the answer went (an error names what the dialog did not show)
    expect(page.locator("#live-waiting [data-result]")).to_contain_text("answered")
    wait_until(lambda: "MySQL please" in answer_of(agent.api, "toolu_ask_2"), 40, what="typed")
    answered = wait_until(
        lambda: next(
            (
                p
                for p in agent.daemon.api("GET", f"/attention-history/{agent.sid}").json()
                if p["id"] == second["id"] and (p["outcome"] or "").startswith("answered:")
            ),
            None,
        ),
        30,
        what="the typed answer recorded",
    )
    assert answered["answeredBy"] == "dashboard" and answered["outcome"] == "answered: MySQL please"


def test_a_long_tool_input_is_folded_under_what_the_tool_will_do(
    agent: Agent, open_page: Any
) -> None:
    """A Write call's whole input (a file's content) would push Allow and Deny below a
    phone's screen: the card says the tool and its file, and folds the input, a tap away."""

    def turn_over() -> bool:
        found = agent.attention()
        return found.get("state") == "waiting"

    now = agent.attention()
    if now.get("state") in ("needs-permission", "needs-input"):  # run alone: the fixture's call
        body = {"decision": "deny", "promptId": now["prompt"]["id"]}
        assert agent.daemon.api("POST", f"/sessions/{agent.sid}/permission", json=body).is_success
    wait_until(turn_over, 60, what="the agent's turn over")
    agent.say("please WRITE-LONG notes")
    asked = agent.wait_state("needs-permission")["prompt"]
    assert asked["tool"] == "Write" and "note 59" not in asked["text"]
    page = open_page(**PHONE)
    page.goto("/attention")
    card = page.locator(f"li[data-agent='{agent.sid}']")
    expect(card.locator(".ask-text")).to_contain_text("notes.md")
    expect(card.get_by_role("button", name=re.compile("^Deny Write"))).to_be_in_viewport()
    folded = card.locator("details.ask-input")
    expect(folded.locator("code")).not_to_be_visible()
    folded.locator("summary").click()
    expect(folded.locator("code")).to_contain_text("note 1: a line of notes")
    shot(page, "attention-long-input-phone")
    card.get_by_role("button", name=re.compile("^Deny Write")).click()
    expect(page.locator("[data-answered]")).to_contain_text("denied Write")
    cwd = Path(agent.daemon.api("GET", f"/sessions/{agent.sid}").json()["cwd"])
    assert not (cwd / "notes.md").exists()
