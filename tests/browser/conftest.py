"""Browser tests: Debian chromium driven by Playwright (``executable_path``, never
``playwright install``) against a real daemon with real tmux and the fake agent.

One daemon and one browser per test module (the fixtures are module-scoped: starting them is
most of the cost); each test gets a fresh browser context (its own cookies) from ``login``.
``THE_LOOP_SCREENSHOTS=1`` makes ``shot`` rewrite ``docs/dashboard/*.png``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright

from tests.conftest import REPO, Env
from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

# Every assertion waits as long as the actions do (the contexts' 30 s): the page answers after
# a real agent did something, and a busy 2-core host (CI) can take longer than the 5 s default.
expect.set_options(timeout=30_000)

CHROMIUM = "/usr/bin/chromium"
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SHOTS = REPO / "docs" / "dashboard"
READ_ONLY = "read-only-token-for-the-browser-tests"
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "device_scale_factor": 2,
    "is_mobile": True,
    "has_touch": True,
}
"""A browser context's options for a 390 px phone."""
SCREEN_PATTERN = r"Permission needed: run (.*)\? \[y/n\]\s*\Z"
ATTENTION = {
    "quietSeconds": 1,
    "pollSeconds": 0.1,
    "notifyAfterSeconds": 3600,
    "harnesses": {
        "fake": {
            "signals": "screen",
            "permissionPatterns": [SCREEN_PATTERN],
            "allowKeys": ["y", "Enter"],
            "denyKeys": ["n", "Enter"],
        }
    },
}


@dataclass
class Site:
    """A running daemon and what the tests look at around it."""

    daemon: Daemon
    work: Work

    @property
    def url(self) -> str:
        return self.daemon.url

    @property
    def token(self) -> str:
        return self.daemon.token

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return self.work.tmux(*args)

    def prompts(self, conversation: str) -> list[str]:
        return [p.text for p in fake_agent.read_prompts(self.work.agent_dir, conversation)]

    def records(self, conversation: str) -> list[dict[str, Any]]:
        return fake_agent.read_records(self.work.agent_dir, conversation)

    def spawn(self, number: int) -> dict[str, Any]:
        """Start a session on issue NUMBER through a signed webhook; its record once listed."""
        body = P.issue_comment_event("the-loop start", number=number)
        sent = self.daemon.post("issue_comment", body, f"browser-{number}-{uuid.uuid4().hex[:6]}")
        assert sent.status_code == 202, sent.text
        return self.wait_session(number)

    def asking(self, number: int, command: str) -> str:
        """Start a session on issue NUMBER and have its fake agent ask permission to run
        COMMAND (``ask``); the session's id."""
        sid = str(self.spawn(number)["id"])
        self.ask(sid, command)
        return sid

    def ask(self, sid: str, command: str) -> None:
        """Once session SID's fake agent waits, have it ask permission to run COMMAND; return
        when it reads ``needs-permission``."""
        wait_until(lambda: self.attention(sid) == "waiting", 30, what="the agent waiting")
        body = {"text": f"ASK-PERMISSION: {command}"}
        sent = self.daemon.api("POST", f"/sessions/{sid}/messages", json=body)
        assert sent.status_code == 200, sent.text
        wait_until(lambda: self.attention(sid) == "needs-permission", 30, what="needs-permission")

    def answered(self, sid: str) -> list[tuple[str, str]]:
        """What session SID's fake agent was answered: (command, answer) pairs."""
        return [(r["command"], r["answer"]) for r in self.records(sid) if r["kind"] == "answer"]

    def wait_session(self, number: int) -> dict[str, Any]:
        ref = f"github:octo/repo#{number}"

        def found() -> dict[str, Any] | None:
            r = self.daemon.api("GET", f"/sessions/{ref.replace('#', '%23')}")
            return r.json() if r.status_code == 200 else None  # type: ignore[no-any-return]

        return wait_until(found, timeout=30, what=f"a session for {ref}")

    def attention(self, session_id: str) -> str | None:
        r = self.daemon.api("GET", f"/attention/{session_id}")
        return str(r.json()["state"]) if r.status_code == 200 else None


@pytest.fixture(scope="module")
def site(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Site]:
    """The module's daemon; a module's ``SITE_TMUX`` dict adds to the ``tmux`` config, and its
    ``SITE_SANDBOX = True`` confines the agents (bubblewrap, no network; the checkout holding
    the fake agent readable, its records folder writable)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"{CHROMIUM} is missing: `make setup` installs chromium (tests/browser_required)"
        )
    root = tmp_path_factory.mktemp("site")
    (root / "home").mkdir()
    (root / "agents").mkdir()
    env = Env(
        root=root,
        state_dir=root / "state",
        config_path=root / "the-loop.yaml",
        socket=f"the-loop-test-{uuid.uuid4().hex[:10]}",
    )
    work = Work(env, root / "agents", cli=None)
    confined = getattr(request.module, "SITE_SANDBOX", False)
    sandbox = {  # the fake agent is a script in this checkout, wherever the checkout lives
        "mode": "bwrap",
        "network": "none",
        "readOnlyPaths": [str(REPO)],
        "writablePaths": [str(root / "agents")],
    }
    work.configure(
        sandbox=sandbox if confined else {"mode": "none"},
        # a module's tests share the daemon, and most start an agent: none waits for a slot
        routing={"maxConcurrentSessions": 32},
        github={"enabled": True},
        attention=ATTENTION,
        tmux={"resumeProbeSeconds": 0.5, **getattr(request.module, "SITE_TMUX", {})},
        standing={
            "enabled": True,
            "sessions": [{"name": "supervisor", "prompt": "watch the queue", "autoStart": False}],
        },
    )
    daemon = Daemon(work)
    daemon.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    try:
        yield Site(daemon, work)
    finally:
        daemon.stop()
        subprocess.run(["tmux", "-L", env.socket, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root / "agents", ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()


Login = Callable[..., Page]


@contextmanager
def pages(browser: Browser, url: str, token: str) -> Iterator[Login]:
    """``open(token=None, **context_options)``: log in on URL through the form in a fresh
    context of BROWSER (with TOKEN by default) and return a page on ``/``; the contexts are
    closed after."""
    contexts: list[BrowserContext] = []

    def open_page(given: str | None = None, **options: Any) -> Page:
        context = browser.new_context(base_url=url, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/login")
        page.get_by_label("API token").fill(given or token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{url}/")
        return page

    try:
        yield open_page
    finally:
        for context in contexts:
            context.close()


@pytest.fixture
def login(site: Site, browser: Browser) -> Iterator[Login]:
    """Log in through the form in a fresh context: ``login(token=None, **context_options)``
    (the full token by default) returns a page on ``/``."""
    with pages(browser, site.url, site.token) as open_page:
        yield open_page


class OnAPage(Protocol):
    """An agent a module's ``agent`` fixture gives: its daemon and its page in the dashboard."""

    daemon: Daemon
    path: str


@pytest.fixture
def open_page(agent: OnAPage, browser: Browser) -> Iterator[Login]:
    """``open_page(token=None, **context_options)``: a logged-in page on the page of the agent
    the test module's ``agent`` fixture gives."""
    with pages(browser, agent.daemon.url, agent.daemon.token) as login:

        def opened(token: str | None = None, **options: Any) -> Page:
            page = login(token, **options)
            page.goto(agent.path)
            return page

        yield opened


def axe_problems(page: Page) -> list[str]:
    """The serious and critical accessibility violations axe-core finds on PAGE (its context
    opened with ``bypass_csp=True``: axe is injected as an inline script)."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
        ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
        ".map(v => `${v.id} (${v.impact}): ${v.help} — ${v.nodes.map(n => n.target).join(', ')}`)"
    )
    return list(found)


def screen_text(page: Page) -> str:
    """What the page's xterm.js shows (its whole buffer)."""
    return str(
        page.evaluate(
            "() => { const b = window.theLoopTerminal?.buffer.active; if (!b) return '';"
            " const out = []; for (let i = 0; i < b.length; i++)"
            " out.push(b.getLine(i)?.translateToString(true) ?? ''); return out.join('\\n'); }"
        )
    )


def shot(page: Page, name: str) -> None:
    """Save a screenshot as docs/dashboard/NAME.png when THE_LOOP_SCREENSHOTS=1."""
    if os.environ.get("THE_LOOP_SCREENSHOTS") == "1":
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


def wait_text(page: Page, selector: str, text: str, timeout: float = 30) -> None:
    """Wait until the element SELECTOR on PAGE contains TEXT."""
    wait_until(
        lambda: text in (page.locator(selector).first.text_content() or ""),
        timeout=timeout,
        what=f"{text!r} in {selector}",
    )
