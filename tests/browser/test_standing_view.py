"""A standing session's page shows its agent as a work item's session page does (one macro,
``agent_tabs``): the real Claude Code (against the fake Messages API) in a standing session,
asking to run a tool, seen on a 390x844 phone and at 1366x768. In the Terminal tab its
permission dialog is on screen down to its last line, in whole rows, without scrolling, and
the agent's window follows the viewer. The page used to put the terminal under the whole
conversation: below the screen's bottom, with the least room (160 px), to which the agent's
window shrank."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, shot
from tests.browser.test_agent_view import (
    DESKTOP,
    DIALOG,
    DIALOG_END,
    Agent,
    claude_daemon,
    in_viewport,
    open_terminal,
    rows_fit,
    shows,
)
from tests.helpers import wait_until

pytestmark = [
    pytest.mark.browser,
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.xdist_group("browser-standing-view"),
]

NAME = "helper"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Agent]:
    """Claude Code as the standing session ``helper``, its first reply in and a permission
    for RUN-TOOL-1 pending."""
    declared = {"enabled": True, "sessions": [{"name": NAME, "prompt": "stand by"}]}
    root = tmp_path_factory.mktemp("standing-site")
    with claude_daemon(root, standing=declared) as (daemon, work, api):
        found = Agent(daemon, work, api, sid=f"standing:{NAME}", path=f"/standing/{NAME}")
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

        def say(text: str) -> None:
            sent = daemon.api("POST", f"/standing/{NAME}/messages", json={"text": text})
            assert sent.status_code == 200, sent.text

        found.asked("please RUN-TOOL-1 now", say)
        yield found


@pytest.mark.parametrize("size", ["phone", "desktop"])
def test_a_standing_sessions_terminal_shows_its_whole_permission_dialog(
    agent: Agent, open_page: Any, size: str
) -> None:
    page = open_page(**(PHONE if size == "phone" else DESKTOP))
    expect(page.locator(".waiting-now .pending")).to_contain_text("echo ran-1")
    expect(page.get_by_role("tab", name="Conversation")).to_have_attribute("aria-selected", "true")
    open_terminal(page)
    wait_until(lambda: shows(page, DIALOG), 30, what="the permission dialog")
    wait_until(lambda: shows(page, DIALOG_END), 30, what="the dialog's last line")
    assert in_viewport(page, "#terminal")
    assert rows_fit(page)
    cols, rows = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    wait_until(lambda: agent.window() == f"{cols}x{rows}", 30, what="the window follows")
    assert page.evaluate("() => document.documentElement.scrollWidth") <= (
        390 if size == "phone" else 1366
    )
    shot(page, f"standing-{size}")
