"""The dashboard's pages in a real browser: login with either token, live Sessions, Allow from
Attention, Standing verbs and refusals, live Events, and axe-core on every page."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.sync_api import Route, expect

from tests.browser.conftest import (
    PHONE,
    READ_ONLY,
    Login,
    Site,
    axe_problems,
    screen_text,
    shot,
)
from tests.fakes import payloads as P
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.config.attention import _default_harnesses
from the_loop.store import open_database

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("browser-pages")]


def test_login_full_and_read_only(site: Site, login: Login) -> None:
    page = login()
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()
    expect(page.locator(".role")).to_have_text("full access")
    page.goto("/standing")
    expect(page.get_by_role("button", name="Start supervisor", exact=True)).to_be_visible()
    expect(page.get_by_role("heading", name="Create a standing session")).to_be_visible()

    viewer = login(READ_ONLY)
    expect(viewer.locator(".role")).to_have_text("read-only")
    viewer.goto("/standing")
    expect(viewer.locator("li[data-standing=supervisor]")).to_be_visible()
    assert viewer.locator("button[data-post], button[data-delete], form[data-api]").count() == 0
    viewer.goto("/status")
    assert viewer.get_by_role("button", name=re.compile("Replay")).count() == 0
    viewer.get_by_role("button", name="Log out").click()
    viewer.wait_for_url(re.compile(r"/login"))
    viewer.goto("/attention")
    expect(viewer).to_have_url(re.compile(r"/login\?next=%2Fattention$"))


def test_a_new_session_appears_without_reload(site: Site, login: Login) -> None:
    page = login()
    expect(page.locator("body[data-live=on]")).to_have_count(1)
    # said in the header, where it covers nothing (it sat over the page's bottom right)
    expect(page.locator("header.top [data-live-state]")).to_have_text("live")
    page.evaluate("window.__sameDocument = true")
    rec = site.spawn(31)
    row = page.locator(f"tr[data-session='{rec['id']}']")
    expect(row).to_contain_text("github:octo/repo#31", timeout=30_000)
    assert page.evaluate("window.__sameDocument") is True
    shot(page, "sessions")


def test_attention_lists_a_permission_and_allow_answers_it(site: Site, login: Login) -> None:
    sid = site.asking(32, "make deploy")

    page = login()
    page.goto("/attention")
    card = page.locator(f"li[data-agent='{sid}']")
    expect(card).to_contain_text("make deploy")
    expect(card).to_contain_text("needs-permission")
    shot(page, "attention")
    card.get_by_role("button", name=re.compile("^Allow")).click()
    # The card leaves the list once the answer lands; the page's own region keeps the result.
    expect(page.locator("[data-answered]")).to_contain_text("github:octo/repo#32: allowed")
    answers = wait_until(lambda: site.answered(sid), 30, what="the answer reached the fake agent")
    assert answers == [("make deploy", "y")]
    expect(page.locator(f"li[data-agent='{sid}']")).to_have_count(0, timeout=30_000)
    # recorded as a person's answer on the dashboard (docs/attention.md), not as a token's
    (answered,) = site.daemon.api("GET", f"/attention-history/{sid}").json()
    assert (answered["decision"], answered["answeredBy"], answered["answeredVia"]) == (
        "allow",
        "dashboard",
        "dashboard",
    )


def test_an_answer_is_shown_on_the_session_page_when_a_re_render_came_during_it(
    site: Site, login: Login
) -> None:
    """Allow on a session's page while a live re-render replaces its waiting block (an event
    on the work item came while the answer was on its way, as answers take about a second):
    the page still says how the answer went, in the block that replaced the one clicked."""
    sid = site.asking(36, "make release")

    page = login()
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route(f"**/api/v1/sessions/{sid}/permission", hold)
    page.goto(f"/sessions/{sid}")
    waiting = page.locator("#live-waiting .waiting-now")
    expect(waiting.locator(".pending")).to_contain_text("make release")
    page.evaluate("document.querySelector('#live-waiting [data-result]').dataset.clicked = '1'")
    # the browser holds the request until the route goes on (Playwright calls `hold` when it
    # next handles its events: `held` is read only after the waits below)
    with page.expect_request(f"**/api/v1/sessions/{sid}/permission"):
        waiting.get_by_role("button", name=re.compile("^Allow")).click()
    # a stranger's comment on the issue: an event on the work item, so the page re-renders
    body = P.issue_comment_event("the-loop start", sender="mallory", number=36)
    assert site.daemon.post("issue_comment", body, f"browser-36-{uuid.uuid4().hex[:6]}").is_success
    expect(page.locator("#live-waiting [data-result]")).to_have_count(1)
    expect(page.locator("#live-waiting [data-result][data-clicked]")).to_have_count(0)
    assert len(held) == 1, held
    held[0].continue_()
    expect(page.locator("#live-waiting [data-result]")).to_contain_text("allowed")
    answers = wait_until(lambda: site.answered(sid), 30, what="the answer reached the fake agent")
    assert answers == [("make release", "y")]


def test_a_new_prompt_on_an_open_page_is_not_shown_as_answered(site: Site, login: Login) -> None:
    """An answer's outcome stays in its place once the prompt has gone, on a session's page and
    on Attention, until a new prompt of the same agent takes that place: the new one is shown
    unanswered (it showed the old "allowed" under its Allow and Deny)."""
    sid = site.asking(38, "make one")
    session = login()
    session.goto(f"/sessions/{sid}")
    attention = session.context.new_page()
    attention.goto("/attention")
    block, card = session.locator("#live-waiting"), attention.locator(f"#agent-{sid}")
    block.get_by_role("button", name=re.compile("^Allow")).click()
    expect(block.locator("[data-result]")).to_contain_text("allowed")
    expect(block.locator(".waiting-now")).to_have_count(0)
    expect(card).to_have_count(0)

    site.ask(sid, "make two")
    expect(block.locator(".pending")).to_contain_text("make two")
    expect(card.locator(".asked")).to_contain_text("make two")
    expect(block.locator("[data-result]")).to_have_text("")
    card.get_by_role("button", name=re.compile("^Allow")).click()
    expect(attention.locator("[data-answered]")).to_contain_text("allowed")
    expect(card).to_have_count(0)

    site.ask(sid, "make three")
    expect(card.locator(".asked")).to_contain_text("make three")
    expect(card.locator("[data-result]")).to_have_text("")
    expect(block.locator(".pending")).to_contain_text("make three")
    expect(block.locator("[data-result]")).to_have_text("")
    block.get_by_role("button", name=re.compile("^Deny")).click()
    expect(block.locator("[data-result]")).to_contain_text("denied")
    answers = wait_until(
        lambda: site.answered(sid) if len(site.answered(sid)) == 3 else None, 30, what="answers"
    )
    assert answers == [("make one", "y"), ("make two", "y"), ("make three", "n")]


def test_a_message_sent_from_a_phone_leads_to_the_question_it_raised(
    site: Site, login: Login
) -> None:
    """On a phone the message box is at the bottom of the session's page, and what the agent
    then waits on a person for is at its top, a few screens up: the Attention section beside
    the box links up to it, and the answer is given there."""
    rec = site.spawn(37)
    sid = rec["id"]
    wait_until(lambda: site.attention(sid) == "waiting", 30, what="the agent waiting")
    page = login(**PHONE)
    page.goto(f"/sessions/{sid}")
    box = page.get_by_label(re.compile("^Message to the agent"))
    box.fill("ASK-PERMISSION: make ship")
    page.get_by_role("button", name="Send message").click()
    link = page.get_by_role("link", name="answer it at the top of the page")
    expect(link).to_be_in_viewport()  # live, where the message was sent from
    expect(page.get_by_role("button", name=re.compile("^Allow"))).not_to_be_in_viewport()
    viewer = login(READ_ONLY, **PHONE)  # who cannot answer is told where to look
    viewer.goto(f"/sessions/{sid}")
    viewer.get_by_role("link", name="see what it asks at the top of the page").tap()
    expect(viewer.locator(".waiting-now .pending")).to_be_in_viewport()
    expect(viewer.get_by_role("button", name=re.compile("^Allow"))).to_have_count(0)
    link.tap()
    allow = page.get_by_role("button", name=re.compile("^Allow"))
    expect(allow).to_be_in_viewport()
    expect(page.locator(".waiting-now .pending")).to_contain_text("make ship")
    allow.tap()
    expect(page.locator("#live-waiting [data-result]")).to_contain_text("allowed")
    expect(link).to_have_count(0)  # answered: nothing waits any more
    answers = wait_until(lambda: site.answered(sid), 30, what="the answer reached the fake agent")
    assert answers == [("make ship", "y")]


def test_a_message_held_behind_a_dialog_says_so_until_it_is_delivered(
    site: Site, login: Login
) -> None:
    """A message sent while the agent asks for a permission waits: the line under the box says
    why, and so does the page while it waits; once the dialog is answered and the message
    delivered, neither says "held" any more."""
    rec = site.spawn(38)
    sid = rec["id"]
    wait_until(lambda: site.attention(sid) == "waiting", 30, what="the agent waiting")
    page = login()
    page.goto(f"/sessions/{sid}")
    box = page.get_by_label(re.compile("^Message to the agent"))
    send = page.get_by_role("button", name="Send message")
    box.fill("ASK-PERMISSION: make ship")
    send.click()
    allow = page.get_by_role("button", name=re.compile("^Allow"))
    expect(allow).to_be_visible()
    box.fill("WAITED-BEHIND-IT")
    send.click()
    said = page.locator("section:has(#msg-h) [data-result]")
    expect(said).to_contain_text("held behind a permission prompt")
    waiting = page.locator("[data-waiting]")
    expect(waiting).to_contain_text("1 message not delivered yet")
    shot(page, "message-held")
    allow.click()
    wait_until(
        lambda: any("WAITED-BEHIND-IT" in p for p in site.prompts(sid)),
        30,
        what="the held message delivered",
    )
    expect(waiting).to_have_count(0)
    expect(said).not_to_contain_text("held")


def test_standing_create_message_delete_and_refusals(site: Site, login: Login) -> None:
    page = login()
    page.goto("/standing")
    declared = page.locator("li[data-standing='supervisor']")
    expect(declared.locator(".badge-source")).to_have_text("declared")
    assert declared.get_by_role("button", name="Delete supervisor").count() == 0
    expect(declared.get_by_label(re.compile("Message to supervisor"))).to_be_disabled()
    # a stopped session offers Start only; the form offers every harness, built-in ones too
    assert declared.get_by_role("button", name=re.compile("^(Stop|Restart) ")).count() == 0
    harnesses = page.get_by_label("Harness").locator("option").all_inner_texts()
    assert {"claude", "codex", "gemini", "demo"} <= set(harnesses), harnesses

    page.get_by_label(re.compile("^Name")).fill("helper")
    page.get_by_label(re.compile("^Brief")).fill("keep the docs tidy")
    page.get_by_role("button", name="Create").click()
    card = page.locator("li[data-standing='helper']")
    expect(card.locator(".badge-source")).to_have_text("created", timeout=30_000)
    expect(card.locator(".badge-running")).to_have_count(1, timeout=30_000)
    conversation = site.daemon.api("GET", "/standing/helper").json()["conversationId"]
    wait_until(lambda: site.prompts(conversation), 30, what="the brief delivered")

    box = card.get_by_label(re.compile("Message to helper"))
    expect(box).to_be_enabled()
    box.fill("please check the README")
    card.get_by_role("button", name="Send").click()
    expect(card.locator("[data-result]")).to_have_text("delivered to helper (23 characters)")
    wait_until(
        lambda: any("please check the README" in p for p in site.prompts(conversation)),
        30,
        what="the message in the fake agent",
    )
    expect(card.get_by_role("button", name="Delete helper")).to_be_visible()
    # a running one offers Stop and Restart, not a Start that would only be refused
    expect(card.get_by_role("button", name="Stop helper")).to_be_visible()
    expect(card.get_by_role("button", name="Restart helper")).to_be_visible()
    assert card.get_by_role("button", name="Start helper", exact=True).count() == 0
    shot(page, "standing")

    card.get_by_role("link", name="helper").click()
    page.wait_for_url("**/standing/helper")  # loaded: its tabs answer a click (a script's)
    page.get_by_role("tab", name="Terminal").click()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)
    wait_until(lambda: "FAKE-AGENT GOT #2" in screen_text(page), 30, what="helper's screen")
    page.get_by_label("Message to helper").fill("second note")
    page.get_by_role("button", name="Send message").click()
    wait_until(
        lambda: any("second note" in p for p in site.prompts(conversation)),
        30,
        what="the message from the standing session's page",
    )
    page.goto("/standing")
    card = page.locator("li[data-standing='helper']")

    refused = site.daemon.api("POST", "/standing", json={"name": "supervisor", "start": False})
    assert refused.status_code == 409, refused.text
    message = refused.json()["error"]["message"]
    page.get_by_label(re.compile("^Name")).fill("supervisor")
    page.get_by_role("button", name="Create").click()
    expect(page.locator(".create [data-result]")).to_have_text(message)

    page.once("dialog", lambda dialog: dialog.accept())
    card.get_by_role("button", name="Delete helper").click()
    expect(page.locator("li[data-standing='helper']")).to_have_count(0, timeout=30_000)


def test_a_standing_session_is_stopped_and_started_from_its_own_page(
    site: Site, login: Login
) -> None:
    """The session's own page has its lifecycle buttons (it said "start it from the Standing
    page"): Stop asks, and the page comes back without a terminal and with Start; Start
    brings the agent and its terminal back."""
    made = site.daemon.api("POST", "/standing", json={"name": "pager", "prompt": "stand by"})
    assert made.status_code in (200, 201), made.text
    page = login()
    page.goto("/standing/pager#terminal")  # its Terminal tab
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1)
    assert page.get_by_role("button", name="Start pager", exact=True).count() == 0
    expect(page.get_by_role("button", name="Restart pager")).to_be_visible()

    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Stop pager").click()
    expect(page.get_by_role("button", name="Start pager", exact=True)).to_be_visible()
    expect(page.locator("h1 .badge-stopped")).to_have_count(1)
    assert page.locator("#terminal").count() == 0
    assert page.get_by_role("button", name="Stop pager").count() == 0

    page.get_by_role("button", name="Start pager", exact=True).click()
    expect(page.locator("#terminal[data-connected=true]")).to_have_count(1, timeout=30_000)
    expect(page.locator("h1 .badge-running")).to_have_count(1)
    assert site.daemon.api("DELETE", "/standing/pager").status_code == 200


def test_events_show_a_new_event_live(site: Site, login: Login) -> None:
    page = login()
    page.goto("/events?type=standing.*")
    expect(page.locator("body[data-live=on]")).to_have_count(1)
    before = page.locator("tr[data-event]").count()
    stopped = site.daemon.api("POST", "/standing/supervisor/stop")
    assert stopped.status_code == 200, stopped.text
    started = site.daemon.api("POST", "/standing/supervisor/start")
    assert started.status_code == 200, started.text
    expect(page.locator("tr[data-event]").first).to_contain_text("standing.started")
    assert page.locator("tr[data-event]").count() > before
    shot(page, "events")


def _waiting(site: Site) -> int:
    listed = site.daemon.api("GET", "/attention")
    assert listed.status_code == 200, listed.text
    return len(listed.json())


def test_nav_counts_waiting_sessions_live_and_standing_cards_show_attention(
    site: Site, login: Login
) -> None:
    """Issue 28: the navigation counts the sessions waiting on a person (what Attention lists),
    updated over the event stream without a reload; a Standing card shows its attention."""
    page = login(bypass_csp=True)
    expect(page.locator("body[data-live=on]")).to_have_count(1)
    page.evaluate("window.__sameDocument = true")
    before = _waiting(site)
    count = page.locator("[data-attention-count]")
    if before == 0:
        expect(count).to_be_hidden()
    made = site.daemon.api(
        "POST", "/standing", json={"name": "asker", "prompt": "be ready", "start": True}
    )
    assert made.status_code in (200, 201) and not made.json()["start"].get("error"), made.text
    wait_until(
        lambda: (
            site.daemon.api("GET", "/attention/standing:asker").json().get("state") == "waiting"
        ),
        30,
        what="the standing session started",
    )
    sent = site.daemon.api(
        "POST", "/standing/asker/messages", json={"text": "ASK-PERMISSION: make release"}
    )
    assert sent.status_code == 200, sent.text
    wait_until(
        lambda: (
            site.daemon.api("GET", "/attention/standing:asker").json().get("state")
            == "needs-permission"
        ),
        30,
        what="the standing session asking",
    )
    assert _waiting(site) == before + 1
    expect(count).to_be_visible()
    expect(count).to_have_text(f"{before + 1} waiting")
    link = page.get_by_role("link", name=re.compile(r"^Attention"))
    expect(link).to_have_accessible_name(f"Attention {before + 1} waiting")
    assert page.evaluate("window.__sameDocument") is True, "updated without a reload"
    assert axe_problems(page) == []

    page.goto("/standing")
    card = page.locator("li[data-standing='asker']")
    expect(card.locator(".attention")).to_contain_text("needs-permission")
    expect(card.locator(".attention .badge-needs-permission")).to_have_count(1)
    expect(card.locator(".waiting")).to_contain_text("make release")
    expect(page.locator("[data-attention-count]")).to_have_text(f"{before + 1} waiting")
    assert axe_problems(page) == []
    shot(page, "standing")

    page.goto("/standing/asker")  # its own page: what it waits for comes first
    waiting = page.locator(".waiting-now")
    expect(waiting.locator(".pending")).to_contain_text("make release")
    expect(waiting.get_by_role("button", name=re.compile("^Allow"))).to_be_in_viewport(ratio=1)
    assert axe_problems(page) == []

    page.goto("/attention")
    asker = page.locator("li[data-agent='standing:asker']")
    expect(asker.get_by_role("link", name="standing asker")).to_have_attribute(
        "href",
        "/standing/asker",  # its own page, where it is answered and watched
    )
    asker.get_by_role("button", name=re.compile("^Allow")).click()
    if before == 0:
        expect(page.locator("[data-attention-count]")).to_be_hidden()
    else:
        expect(page.locator("[data-attention-count]")).to_have_text(f"{before} waiting")
    deleted = site.daemon.api("DELETE", "/standing/asker")
    assert deleted.status_code == 200, deleted.text


PAGES = ["/", "/attention", "/standing", "/standing/supervisor", "/events", "/status"]


def test_every_page_passes_axe(site: Site, login: Login) -> None:
    rec = site.spawn(33)
    page = login(bypass_csp=True)
    problems: dict[str, list[str]] = {}
    for path in [*PAGES, f"/sessions/{rec['id']}"]:
        page.goto(path)
        page.wait_for_load_state("load")
        problems[path] = axe_problems(page)
        if path == "/status":
            shot(page, "status")
    page.context.clear_cookies()
    page.goto("/login")
    problems["/login"] = axe_problems(page)
    shot(page, "login")
    assert {path: found for path, found in problems.items() if found} == {}


CUT = """() => [...document.querySelectorAll('main *')].filter(el => {
  const box = el.getBoundingClientRect();
  const wrap = el.closest('.table-wrap');
  return box.width > 0 && box.right > window.innerWidth + 1 && !(wrap && wrap !== el);
}).map(el => el.tagName + '.' + el.className + ': ' + el.textContent.trim().slice(0, 40))"""
WIDE = """() => [...document.querySelectorAll('.table-wrap')]
  .filter(w => w.scrollWidth > w.clientWidth + 1)
  .map(w => w.getAttribute('aria-label') + ': ' + w.scrollWidth + ' > ' + w.clientWidth)"""


def test_every_page_fits_a_phone(site: Site, login: Login) -> None:
    """On a 390 px phone no page's text runs past the screen's edge: nothing in a page is wider
    than the window, and a table's long words (paths, ids) wrap instead of hiding its last
    column off screen; no table, the sessions table included, scrolls sideways."""
    rec = site.spawn(34)
    # a screen pattern's rule, as the events list shows it: a regex with nowhere to break
    pattern = _default_harnesses()["codex"]["permissionPatterns"][0]
    rule = f"permissionPatterns[0] {pattern!r} matched"
    db = open_database(site.work.env.state_dir, site.work.env.database_url)
    try:
        ev.emit(
            db, "session.attention_changed", source="screen", work_item=rec["workItem"],
            session_id=rec["id"], **{"from": "working", "to": "needs-permission"},
            signal="screen", rule=rule,
        )  # fmt: skip
    finally:
        db.close()
    page = login(**PHONE)
    found: dict[str, list[str]] = {}
    for path in [*PAGES, f"/sessions/{rec['id']}"]:
        page.goto(path)
        page.wait_for_load_state("load")
        if path == "/":
            shot(page, "sessions-phone")
        cut = [*page.evaluate(CUT), *page.evaluate(WIDE)]
        if cut:
            found[path] = cut
        assert page.evaluate("() => document.documentElement.scrollWidth") <= 390, path
    assert found == {}


def test_starting_an_agent_on_a_phone_shows_what_happened(site: Site, login: Login) -> None:
    """On a phone the sessions come first: with sessions to list, the Start form is folded
    under its heading and the first session is on the first screen (the form filled it). Its
    answer is below its button, under the fold: it is brought into view (it stayed off
    screen, so a person saw the form clear and nothing else)."""
    site.spawn(35)
    page = login(**PHONE)
    row = page.locator("table.sessions tbody tr").first
    expect(row).to_be_visible()  # a live re-render may replace it a moment: asked again then
    first = wait_until(row.bounding_box, 10, what="the first session's box")
    assert first["y"] + first["height"] <= 844, first
    expect(page.get_by_label("Work item")).not_to_be_visible()
    page.get_by_text("Start an agent").click()
    page.get_by_label("Work item").fill("local:from-a-phone")
    page.get_by_label("Prompt").fill("say hello")
    page.get_by_role("button", name="Start").click()
    said = page.locator("[data-result].ok", has_text="spawned local:from-a-phone")
    expect(said).to_have_count(1, timeout=30_000)
    box = said.bounding_box()
    # in view: scrolled to the bottom edge it may end a fraction of a pixel past it
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= 844 + 1, box
