"""The browser terminal with a confined agent (SPEC §18, "attach and observe as before"): the
Session page shows the pane of an agent that runs inside bubblewrap, keys typed in the browser
reach it, and a phone sees it too."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser.conftest import Login, Site, screen_text, shot
from tests.browser.test_terminal import PHONE, open_terminal
from tests.helpers import wait_until

pytestmark = [
    pytest.mark.browser,
    pytest.mark.xdist_group("browser-confined"),
    pytest.mark.bwrap,
]

SITE_SANDBOX = True


def test_the_browser_terminal_shows_a_confined_agent_and_typing_reaches_it(
    site: Site, login: Login
) -> None:
    rec = site.spawn(51)
    sid, target = rec["id"], rec["tmuxTarget"]
    site.work.wait_prompts(sid, 1, timeout=60)
    # the pane runs the agent confined: its process (the launch script exec'd it) is bwrap
    pane = site.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_pid}")
    started = Path(f"/proc/{pane.stdout.strip()}/cmdline").read_bytes().split(b"\0")
    assert Path(started[0].decode()).name == "bwrap", started

    page = login()
    open_terminal(page, sid)
    page.locator("#terminal").click()
    page.keyboard.type("hello from the browser")
    page.keyboard.press("Enter")
    wait_until(lambda: "hello from the browser" in site.prompts(sid), 30, what="the typed line")
    wait_until(lambda: "FAKE-AGENT GOT #2" in screen_text(page), 30, what="the agent's answer")
    page.close()

    phone = login(**PHONE)
    open_terminal(phone, sid, shows="FAKE-AGENT GOT #2")
    shot(phone, "session-confined-phone")
