"""The Session page's browser terminal in a real browser: the agent's screen, typing into the
fake agent, read-only for the read-only login and for closed sessions, the agent's window sized
to its interactive viewer and back when it leaves, the bridge's tmux client gone with the tab,
a phone: key toolbar and touch scroll, and the page's own refusals: a POST without the CSRF
token, a WebSocket from a foreign page."""

from __future__ import annotations

import http.server
import os
import re
import signal
import threading

import pytest
from playwright.sync_api import Page, Route, WebSocket, expect

from tests.browser.conftest import PHONE, READ_ONLY, Login, Site, screen_text
from tests.helpers import wait_until

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser-terminal")]

SITE_TMUX = {"killHarnessOnClose": False}
"""A closed session's agent keeps running here, so that a keystroke could still reach it."""


def open_terminal(page: Page, session_id: str, shows: str = "FAKE-AGENT READY") -> None:
    page.goto(f"/sessions/{session_id}")
    page.get_by_role("tab", name="Terminal").click()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)
    wait_until(lambda: shows in screen_text(page), 30, what=f"{shows!r} on the agent's screen")


def window_size(site: Site, target: str) -> str:
    shown = site.tmux(
        "display-message", "-p", "-t", f"={target}:", "#{window_width}x#{window_height}"
    )
    return shown.stdout.strip()


def viewer_window(page: Page) -> str:
    """The window size a writable terminal asks of the agent: its own, whole (the agent's
    session shows no tmux status line, decision 0108)."""
    found = page.evaluate("() => [window.theLoopTerminal.cols, window.theLoopTerminal.rows]")
    return f"{found[0]}x{found[1]}"


WHOLE_ROWS = """() => {
    const box = document.getElementById("terminal").getBoundingClientRect();
    const rows = [...document.querySelectorAll("#terminal .xterm-rows > div")];
    const last = rows[rows.length - 1].getBoundingClientRect();
    const screen = document.querySelector("#terminal .xterm-screen").getBoundingClientRect();
    const end = document.elementFromPoint(screen.right - 1, last.top + last.height / 2);
    return {rows: rows.length, cut: Math.max(last.bottom - box.bottom, screen.right - box.right),
            shown: end !== null && end.closest("#terminal .xterm-screen") !== null,
            hit: end && end.tagName + "." + end.className};
}"""


def shows_whole_rows(page: Page) -> None:
    """Every row of the terminal lies inside the terminal's box (it hides what overflows):
    none is cut in half, at the bottom or on the right, and the right end of the last row is
    on screen (nothing in between clips it)."""
    found = page.evaluate(WHOLE_ROWS)
    rows = page.evaluate("() => window.theLoopTerminal.rows")
    assert found["rows"] == rows and found["cut"] <= 0 and found["shown"], found


def clients(site: Site, target: str) -> list[str]:
    listed = site.tmux("list-clients", "-t", f"={target}", "-F", "#{client_tty}")
    return listed.stdout.split()


def marker_delivered(site: Site, session_id: str, marker: str) -> list[str]:
    """Deliver MARKER through the API and return every prompt once it arrived: whatever was
    typed before it and could reach the agent has reached it by then."""
    sent = site.daemon.api("POST", f"/sessions/{session_id}/messages", json={"text": marker})
    assert sent.status_code == 200, sent.text
    wait_until(lambda: any(marker in p for p in site.prompts(session_id)), 30, what=marker)
    return site.prompts(session_id)


def test_terminal_shows_the_screen_and_typing_reaches_the_agent(site: Site, login: Login) -> None:
    rec = site.spawn(41)
    sid, target = rec["id"], rec["tmuxTarget"]
    site.work.wait_prompts(sid, 1, timeout=30)
    size = window_size(site, target)
    page = login()
    open_terminal(page, sid)
    assert len(clients(site, target)) == 1
    page.locator("#terminal").click()
    page.keyboard.type("hello from the browser")
    page.keyboard.press("Enter")
    wait_until(lambda: "hello from the browser" in site.prompts(sid), 30, what="the typed line")
    wait_until(lambda: "FAKE-AGENT GOT #2" in screen_text(page), 30, what="the agent's answer")
    # the agent's window follows its one interactive viewer, row for row
    assert window_size(site, target) == viewer_window(page)
    shows_whole_rows(page)
    page.close()
    wait_until(lambda: not clients(site, target), 30, what="the bridge's tmux client gone")
    wait_until(lambda: window_size(site, target) == size, 30, what="the window size restored")


def test_the_terminal_shows_whole_rows_at_every_window_height(site: Site, login: Login) -> None:
    """A writable terminal fills the room left in the window: at each height over two rows'
    worth of pixels (every remainder a row can leave), its rows, the last one too, are
    whole, and the connection's state line below the keys is in the window."""
    rec = site.spawn(45)
    site.work.wait_prompts(rec["id"], 1, timeout=30)
    page = login()
    open_terminal(page, rec["id"])
    laid_out = (
        "() => { const el = document.getElementById('terminal');"
        " return Math.abs(parseFloat(el.style.height) - roomFor(el)) < 0.01"
        " && el.querySelectorAll('.xterm-rows > div').length === window.theLoopTerminal.rows; }"
    )
    for height in range(700, 736):
        page.set_viewport_size({"width": 1280, "height": height})
        wait_until(lambda: page.evaluate(laid_out), 10, what=f"the terminal laid out at {height}")
        shows_whole_rows(page)
        below = page.evaluate(
            "() => document.querySelector('[data-term-state]').getBoundingClientRect().bottom"
        )
        assert below <= height, f"the state line ends at {below} px in a {height} px window"


ROW_OF = """(text) => {
    const term = window.theLoopTerminal, b = term.buffer.active;
    for (let i = b.viewportY; i < b.viewportY + term.rows; i++) {
        if (b.getLine(i)?.translateToString(true) !== text) continue;
        const row = document.querySelectorAll("#terminal .xterm-rows > div")[i - b.viewportY];
        const box = row.getBoundingClientRect();
        const screen = document.querySelector("#terminal .xterm-screen").getBoundingClientRect();
        return {x: box.left, y: box.top, height: box.height,
                width: screen.width / term.cols * text.length};
    }
    return null;
}"""


def test_underscores_show_in_the_terminal(site: Site, login: Login) -> None:
    """An agent's `$THE_LOOP_GITHUB_API` reads as itself, not `$THE LOOP GITHUB API`, on a
    laptop's screen (one device pixel per CSS pixel). Linux's monospace font (DejaVu Sans
    Mono) draws `_` at the very bottom of its glyph box, and xterm.js's DOM renderer clips each
    row to the cell's height: at 14 px rows one pixel too short hid every underscore. A row
    with underscores must look different from the same row with spaces."""
    rec = site.spawn(49)
    sid = rec["id"]
    site.work.wait_prompts(sid, 1, timeout=30)
    page = login()
    open_terminal(page, sid)
    lines = ["$THE_LOOP_GITHUB_API a_b", "$THE LOOP GITHUB API a b"]
    marker_delivered(site, sid, "\n".join(f"ANSWER: {line}" for line in lines))
    wait_until(
        lambda: all(page.evaluate(ROW_OF, line) for line in lines), 30, what="both lines shown"
    )
    shots = []
    for line in lines:
        box = page.evaluate(ROW_OF, line)
        shots.append(page.screenshot(clip=box))
    same = shots[0] == shots[1]
    assert not same, "the underscores do not show: the row looks like the one with spaces"


def test_a_tab_tapped_before_the_page_scripts_ran_is_honoured(site: Site, login: Login) -> None:
    """On a phone's slow link the page shows before its scripts have run (they wait for
    xterm.js): a tap on the Terminal tab then is kept in the address (the tabs are links to
    #terminal and #conversation) and the terminal opens once they run; Space selects a tab
    from the keyboard."""
    rec = site.spawn(48)
    sid = rec["id"]
    site.work.wait_prompts(sid, 1, timeout=30)
    page = login()
    held: list[Route] = []
    page.route(re.compile(r"/conversation\.js"), lambda route: held.append(route))
    page.goto(f"/sessions/{sid}", wait_until="commit")
    page.get_by_role("tab", name="Terminal").click()
    wait_until(lambda: held, 30, what="the page asking for its script")
    assert page.url.endswith("#terminal"), page.url
    assert page.locator("#panel-terminal").is_hidden()  # nothing ran the tabs yet
    held[0].continue_()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)
    wait_until(lambda: "FAKE-AGENT READY" in screen_text(page), 30, what="the agent's screen")
    page.get_by_role("tab", name="Conversation").focus()
    page.keyboard.press(" ")
    expect(page.locator("#panel-conversation")).to_be_visible()
    expect(page.locator("#panel-terminal")).to_be_hidden()
    assert page.url.endswith("#conversation"), page.url


def test_read_only_login_cannot_type(site: Site, login: Login) -> None:
    rec = site.spawn(42)
    sid = rec["id"]
    site.work.wait_prompts(sid, 1, timeout=30)
    page = login(READ_ONLY)
    frames: list[str] = []
    page.on("websocket", lambda ws: _record_sent(ws, frames))
    open_terminal(page, sid)
    expect(page.locator("#term-h .badge-readonly")).to_have_count(1)
    assert page.locator(".keys").count() == 0
    wait_until(lambda: page.locator("#terminal[data-scale]").count(), 30, what="scaled")
    shows_whole_rows(page)
    scale = page.locator("#terminal").get_attribute("data-scale")
    page.set_viewport_size({"width": 390, "height": 844})  # a phone: scaled down, whole lines
    wait_until(lambda: page.locator("#terminal").get_attribute("data-scale") != scale, 10)
    shows_whole_rows(page)
    page.locator("#terminal").click()
    page.keyboard.type("read-only keys")
    page.keyboard.press("Enter")
    prompts = marker_delivered(site, sid, "a marker sent after them")
    assert not any("read-only keys" in p for p in prompts), prompts
    assert not any('"input"' in f for f in frames), frames


def test_closed_session_cannot_be_typed_into(site: Site, login: Login) -> None:
    rec = site.spawn(43)
    sid, target = rec["id"], rec["tmuxTarget"]
    site.work.wait_prompts(sid, 1, timeout=30)
    closed = site.daemon.api("POST", f"/sessions/{sid}/close", json={})
    assert closed.status_code == 200, closed.text
    page = login()
    frames: list[str] = []
    page.on("websocket", lambda ws: _record_sent(ws, frames))
    open_terminal(page, sid)
    expect(page.locator("#term-h .badge-readonly")).to_have_count(1)
    assert page.get_by_label("Message to the agent (delivered like a comment)").count() == 0
    page.locator("#terminal").click()
    page.keyboard.type("keys for a closed session")
    page.keyboard.press("Enter")
    for keys in (["-l", "typed by tmux"], ["Enter"]):
        sent = site.tmux("send-keys", "-t", f"={target}:", *keys)
        assert sent.returncode == 0, sent.stderr
    try:
        wait_until(lambda: "typed by tmux" in site.prompts(sid), 30, what="the agent still reads")
    except AssertionError as exc:  # say what the agent had and showed (seen once on CI-like load)
        shown = site.tmux("capture-pane", "-p", "-t", f"={target}:").stdout
        raise AssertionError(f"{exc}: it recorded {site.prompts(sid)!r}; screen:\n{shown}") from exc
    assert not any("keys for a closed session" in p for p in site.prompts(sid))
    assert not any('"input"' in f for f in frames), frames


def test_an_agent_that_exits_while_watched_on_a_phone_leaves_its_last_screen(
    site: Site, login: Login
) -> None:
    """Watching an agent on a phone when it exits on its own: the terminal shows the screen it
    left (tmux's `Pane is dead` line last) without a tmux client, and the page says, without a
    reload, that the pane is dead and the harness exited (decision 0088)."""
    rec = site.spawn(47)
    sid, target = rec["id"], rec["tmuxTarget"]
    site.work.wait_prompts(sid, 1, timeout=30)
    page = login(**PHONE)
    open_terminal(page, sid, shows="AI coding agent")  # its first prompt, wrapped on a phone
    expect(page.locator("#live-meta")).to_contain_text("pane live")
    toolbar = page.get_by_role("toolbar", name="Terminal keys")
    expect(toolbar).to_be_visible()
    pid = site.tmux("display-message", "-p", "-t", f"={target}:", "#{pane_pid}").stdout
    os.kill(int(pid), signal.SIGKILL)
    wait_until(lambda: "Pane is dead (signal 9" in screen_text(page), 30, what="its last screen")
    assert clients(site, target) == []
    expect(page.locator("#live-meta")).to_contain_text("pane dead")
    expect(page.locator("#live-waiting")).to_contain_text("the harness exited")
    # the terminal says it shows a record, and offers no keys to type into it
    expect(page.locator("[data-term-state]")).to_contain_text("the agent has ended")
    expect(toolbar).to_be_hidden()


def test_phone_key_toolbar_touch_scroll_and_window_size(site: Site, login: Login) -> None:
    rec = site.spawn(44)
    sid, target = rec["id"], rec["tmuxTarget"]
    site.work.wait_prompts(sid, 1, timeout=30)
    for n in range(30):
        sent = site.daemon.api("POST", f"/sessions/{sid}/messages", json={"text": f"line {n}"})
        assert sent.status_code == 200, sent.text
    site.work.wait_prompts(sid, 31, timeout=60)
    size = window_size(site, target)
    page = login(**PHONE)
    open_terminal(page, sid, shows="FAKE-AGENT GOT #31")
    wait_until(lambda: window_size(site, target) == viewer_window(page), 30, what="the window")
    assert window_size(site, target) != size
    shows_whole_rows(page)

    toolbar = page.get_by_role("toolbar", name="Terminal keys")
    for key in ("Esc", "Tab", "Ctrl-C", "Enter"):
        expect(toolbar.get_by_role("button", name=key)).to_be_visible()
    page.locator("#terminal").click()
    page.keyboard.type("dropped by ctrl-c")
    toolbar.get_by_role("button", name="Ctrl-C").click()
    page.keyboard.type("from the phone")
    toolbar.get_by_role("button", name="Enter").click()
    wait_until(lambda: "from the phone" in site.prompts(sid), 30, what="the toolbar's Enter")
    assert not any("dropped by ctrl-c" in p for p in site.prompts(sid))

    wait_until(lambda: _scroll(page)["base"] > 0, 30, what="scrollback in the terminal")
    box = page.locator("#terminal").bounding_box()
    assert box is not None
    cdp = page.context.new_cdp_session(page)
    x, y = box["x"] + box["width"] / 2, box["y"] + 40
    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": [{"x": x, "y": y}]})
    for step in range(1, 11):
        point = {"x": x, "y": y + step * 25}
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": [point]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    scrolled = _scroll(page)
    assert scrolled["viewport"] < scrolled["base"], scrolled


def _scroll(page: Page) -> dict[str, int]:
    found = page.evaluate(
        "() => { const b = window.theLoopTerminal.buffer.active;"
        " return {viewport: b.viewportY, base: b.baseY}; }"
    )
    return {"viewport": int(found["viewport"]), "base": int(found["base"])}


def _record_sent(ws: WebSocket, frames: list[str]) -> None:
    ws.on("framesent", lambda payload: frames.append(str(payload)))


class ForeignPage:
    """A page of another origin on loopback (same site for the browser: a cookie of the
    dashboard's host would go with its requests)."""

    def __init__(self) -> None:
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b"<!doctype html><title>elsewhere</title><p>another site</p>"
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


OPEN_SOCKET = """url => new Promise(resolve => {
    const ws = new WebSocket(url);
    ws.onopen = () => { ws.close(); resolve("open"); };
    ws.onerror = () => resolve("refused");
})"""


def test_a_post_without_csrf_and_a_socket_from_a_foreign_page_are_refused(
    site: Site, login: Login
) -> None:
    rec = site.spawn(45)
    sid = rec["id"]
    site.work.wait_prompts(sid, 1, timeout=30)
    page = login()
    path = f"/api/v1/sessions/{sid}/messages"
    posted = page.evaluate(
        """path => fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                body: JSON.stringify({text: "no csrf from the page"})})
                   .then(async r => [r.status, (await r.json()).error.code])""",
        path,
    )
    assert posted == [403, "csrf"]
    socket = site.url.replace("http://", "ws://") + f"/api/v1/sessions/{sid}/terminal"
    assert page.evaluate(OPEN_SOCKET, socket) == "open"  # the dashboard's own page may
    foreign = ForeignPage()
    try:
        page.goto(foreign.url)
        assert page.evaluate(OPEN_SOCKET, socket) == "refused"
    finally:
        foreign.close()
    prompts = marker_delivered(site, sid, "a marker after the refused requests")
    assert not any("no csrf from the page" in p for p in prompts), prompts
