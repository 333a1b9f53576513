"""A standing session's page shows its agent as a work item's session page does (one macro,
``agent_tabs``): the real Claude Code (against the fake Messages API) in a standing session,
asking to run a tool, seen on a 390x844 phone and at 1366x768. In the Terminal tab its
permission dialog is on screen down to its last line, in whole rows, without scrolling, and
the agent's window follows the viewer. The page used to put the terminal under the whole
conversation: below the screen's bottom, with the least room (160 px), to which the agent's
window shrank."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.browser.conftest import CHROMIUM, PHONE, shot
from tests.browser.test_agent_view import (
    DESKTOP,
    DIALOG,
    DIALOG_END,
    Agent,
    in_viewport,
    reply,
    rows_fit,
    shows,
)
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.browser,
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.xdist_group("browser-standing-view"),
]

NAME = "helper"


@pytest.fixture(scope="module")
def standing(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    """Claude Code as the standing session ``helper``, its first reply in and a permission
    for RUN-TOOL-1 pending."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: `make setup` installs chromium")
    root = tmp_path_factory.mktemp("standing-site")
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
            standing={"enabled": True, "sessions": [{"name": NAME, "prompt": "stand by"}]},
            attention={"pollSeconds": 0.1, "notifyAfterSeconds": 3600},
        )
        daemon = Daemon(work)
        daemon.start()
        found = Agent(daemon, work, api, sid=f"standing:{NAME}")
        try:
            row = wait_until(
                lambda: (
                    (r := daemon.api("GET", f"/standing/{NAME}")).status_code == 200
                    and r.json().get("target")
                    and r.json()
                ),
                60,
                what="the standing session",
            )
            found.target = row["target"]
            try:
                found.wait_screen(r"NEWEST-LINE-\d+", 90)
                sent = daemon.api(
                    "POST", f"/standing/{NAME}/messages", json={"text": "please RUN-TOOL-1 now"}
                )
                assert sent.status_code == 200, sent.text
                found.wait_screen(DIALOG, 90)
            except AssertionError:
                raise AssertionError(f"{found.attention()}\n{found.screen()}") from None
            yield found
        finally:
            daemon.stop()
            subprocess.run(["tmux", "-L", env.socket, "kill-server"], capture_output=True)
            shutil.rmtree(root / "agents", ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM)
        yield chromium
        chromium.close()


@pytest.fixture
def open_page(standing: Agent, browser: Browser) -> Iterator[Any]:
    contexts: list[BrowserContext] = []

    def login(**options: Any) -> Page:
        context = browser.new_context(base_url=standing.daemon.url, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/login")
        page.get_by_label("API token").fill(standing.daemon.token)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(f"{standing.daemon.url}/")
        page.goto(f"/standing/{NAME}")
        return page

    yield login
    for context in contexts:
        context.close()


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_standing_sessions_terminal_shows_its_whole_permission_dialog(
    standing: Agent, open_page: Any, size: str
) -> None:
    page = open_page(**(PHONE if size == "phone" else DESKTOP))
    expect(page.locator(".waiting-now .pending")).to_contain_text("echo ran-1")
    expect(page.get_by_role("tab", name="Conversation")).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="Terminal").click()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)
    wait_until(lambda: shows(page, DIALOG), 30, what="the permission dialog")
    wait_until(lambda: shows(page, DIALOG_END), 30, what="the dialog's last line")
    assert in_viewport(page, "#terminal")
    assert rows_fit(page)
    cols, rows = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    wait_until(lambda: standing.window() == f"{cols}x{rows - 1}", 30, what="the window follows")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= (
        390 if size == "phone" else 1366
    )
    shot(page, f"standing-{size}")
