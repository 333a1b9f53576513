"""The dashboard's pages over real HTTP (no browser): login required, rendered for the viewer's
role, filters, versioned static files, and the inbox/outbox operator routes they use."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

READ_ONLY = "read-only-token-for-the-page-tests"
PAGES = ["/", "/attention", "/standing", "/standing/keeper", "/events", "/status"]


@pytest.fixture
def site(work: Work) -> Iterator[Daemon]:
    work.configure(
        github={"enabled": True},
        standing={"enabled": True, "sessions": [{"name": "keeper", "autoStart": False}]},
    )
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    yield d
    d.stop()


def logged_in(d: Daemon, token: str) -> tuple[httpx.Client, str]:
    client = httpx.Client(base_url=d.url, timeout=30)
    r = client.post("/login", json={"token": token})
    assert r.status_code == 200, r.text
    return client, str(r.json()["csrfToken"])


def spawned(d: Daemon, number: int) -> str:
    body = P.issue_comment_event("the-loop start", number=number)
    assert d.post("issue_comment", body, f"pages-{number}").status_code == 202
    ref = f"github:octo/repo%23{number}"
    wait_until(lambda: d.api("GET", f"/sessions/{ref}").status_code == 200, 30, what="spawn")
    return str(d.api("GET", f"/sessions/{ref}").json()["id"])


def test_pages_need_a_login_and_render_for_the_role(site: Daemon) -> None:
    sid = spawned(site, 51)
    anonymous = httpx.get(f"{site.url}/", timeout=30)
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login"
    deep = httpx.get(f"{site.url}/events?level=info", timeout=30)
    assert deep.headers["location"] == "/login?next=%2Fevents%3Flevel%3Dinfo"
    assert httpx.get(f"{site.url}/sessions/{sid}", timeout=30).status_code == 303

    full, csrf = logged_in(site, site.token)
    for path in [*PAGES, f"/sessions/{sid}"]:
        page = full.get(path)
        assert page.status_code == 200, (path, page.text)
        assert page.headers["content-type"].startswith("text/html")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert f'<meta name="csrf-token" content="{csrf}">' in page.text
        assert site.token not in page.text and READ_ONLY not in page.text
    listing = full.get("/").text
    assert f'href="/sessions/{sid}"' in listing and "github:octo/repo#51" in listing
    session = full.get(f"/sessions/{sid}").text
    assert f'data-ws="/api/v1/sessions/{sid}/terminal"' in session
    changed = wait_until(  # each event in the session's list says what it was
        lambda: re.search(
            r"<code>session\.attention_changed</code> (\S+ → waiting: [^<]+)</li>",
            full.get(f"/sessions/{sid}").text,
        ),
        30,
        what="the change to waiting listed",
    )
    assert changed.group(1).startswith("working → waiting: "), changed.group(1)
    assert 'data-read-only="false"' in session and "data-post=" in session
    standing = full.get("/standing").text
    assert 'data-post="/api/v1/standing/keeper/start"' in standing
    assert 'data-delete="/api/v1/standing/keeper"' not in standing  # declared: no delete

    viewer, _ = logged_in(site, READ_ONLY)
    for path in [*PAGES, f"/sessions/{sid}"]:
        page = viewer.get(path).text
        assert "data-post=" not in page and "data-delete=" not in page, path
        assert "data-api=" not in page, path
    assert 'data-read-only="true"' in viewer.get(f"/sessions/{sid}").text


def test_a_stopped_standing_session_says_when_it_last_started(site: Daemon) -> None:
    """A running standing session says when it started; once stopped, that it *last* started
    then (it was read as still running since that time)."""
    client, _ = logged_in(site, site.token)
    assert site.api("POST", "/standing/keeper/start").json()["outcome"] == "started"
    for path in ["/standing", "/standing/keeper"]:
        shown = client.get(path).text
        assert " · started " in shown and "last started" not in shown, path
    assert site.api("POST", "/standing/keeper/stop").json()["outcome"] == "stopped"
    for path in ["/standing", "/standing/keeper"]:
        shown = client.get(path).text
        assert " · last started " in shown and " · started " not in shown, path


def test_filters_narrow_and_bad_ones_are_refused(site: Daemon) -> None:
    spawned(site, 52)
    client, _ = logged_in(site, site.token)
    assert "github:octo/repo#52" in client.get("/", params={"repo": "octo/repo"}).text
    assert "github:octo/repo#52" not in client.get("/", params={"repo": "other/repo"}).text
    # a local item has no repository: it is not offered as one (each was, by its own name)
    started = site.api("POST", "/sessions", json={"ref": "local:no-repo", "prompt": "hi"})
    assert started.status_code in (200, 201, 202), started.text
    offered = re.findall(r'<option value="([^"]+)"', client.get("/").text)
    assert "octo/repo" in offered and not [o for o in offered if "no-repo" in o], offered
    assert "github:octo/repo#52" not in client.get("/", params={"status": "closed"}).text
    assert "github:octo/repo#52" in client.get("/", params={"status": "active"}).text
    typed = client.get("/sessions", params={"status": "active"})  # a URL a person might type
    assert typed.status_code == 307 and typed.headers["location"] == "/?status=active"
    bad = client.get("/", params={"status": "sleeping"})
    assert bad.status_code == 400 and bad.headers["content-type"].startswith("text/html")
    assert "invalid status &#39;sleeping&#39;" in bad.text
    bad = client.get("/", params={"attention": "dozing"})
    assert bad.status_code == 400, bad.text
    bad = client.get("/events", params={"level": "loud"})
    assert bad.status_code == 400, bad.text
    missing = client.get("/sessions/no-such-session")
    assert missing.status_code == 404 and "no session &#39;no-such-session&#39;" in missing.text
    events = client.get("/events", params={"type": "webhook.*"}).text
    assert "webhook.received" in events and "session.spawned" not in events


def test_static_files_are_versioned_and_cached(site: Daemon) -> None:
    client, _ = logged_in(site, site.token)
    sid = spawned(site, 53)
    page = client.get(f"/sessions/{sid}").text
    urls = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    names = {u.split("/", 3)[3] for u in urls}
    assert {"dashboard.css", "dashboard.js", "terminal.js"} <= names
    assert {"vendor/xterm.js", "vendor/xterm.css", "vendor/addon-fit.js"} <= names
    for url in urls:
        got = httpx.get(f"{site.url}{url}", timeout=30)
        assert got.status_code == 200, url
        assert got.headers["cache-control"] == "public, max-age=31536000, immutable"
    xterm = next(u for u in urls if u.endswith("vendor/xterm.js"))
    assert "text/javascript" in httpx.get(f"{site.url}{xterm}").headers["content-type"]
    stale = httpx.get(f"{site.url}/static/000000000000/dashboard.css", timeout=30)
    assert stale.status_code == 200 and stale.headers["cache-control"] == "no-cache"
    for bad in ("/static/x/../app.py", "/static/x/%2e%2e/app.py", "/static/x/nope.js"):
        assert httpx.get(f"{site.url}{bad}", timeout=30).status_code == 404, bad


def test_inbox_replay_and_outbox_routes(site: Daemon) -> None:
    spawned(site, 54)
    delivery = "pages-54"
    replayed = site.api("POST", f"/inbox/{delivery}/replay")
    assert replayed.status_code == 200, replayed.text
    assert replayed.json() == {"deliveryId": delivery, "outcome": "daemon", "status": None,
                               "summary": "", "error": None}  # fmt: skip
    assert site.api("POST", "/inbox/no-such-delivery/replay").status_code == 404
    outbox = site.api("GET", "/outbox")
    assert outbox.status_code == 200 and isinstance(outbox.json(), list)
    missing = site.api("POST", "/outbox/999999/replay")
    assert missing.status_code == 404 and "no outbox item 999999" in missing.text
    assert site.api("POST", f"/inbox/{delivery}/replay", token=READ_ONLY).status_code == 403

    client, csrf = logged_in(site, site.token)
    assert client.post(f"/api/v1/inbox/{delivery}/replay").status_code == 403
    done = client.post(f"/api/v1/inbox/{delivery}/replay", headers={"X-CSRF-Token": csrf})
    assert done.status_code == 200, done.text
    status = client.get("/status").text
    assert f"/api/v1/inbox/{delivery}/replay" in status
