"""Dashboard login over real HTTP: the token exchanged for a cookie, CSRF, roles, logout."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work

READ_ONLY = "read-only-token-for-the-dashboard-tests"


@pytest.fixture
def both(work: Work) -> Iterator[Daemon]:
    """A daemon with a full (generated) and a read-only token."""
    work.configure(github={"enabled": True})
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    yield d
    d.stop()


def started(daemon: Daemon) -> str:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "dash-1")
    assert r.status_code == 202
    wait_until(lambda: daemon.api("GET", "/sessions").json(), timeout=30, what="a session")
    return str(daemon.api("GET", "/sessions").json()[0]["id"])


def login(daemon: Daemon, token: str) -> tuple[httpx.Client, str]:
    """A client holding the session cookie of a JSON login, and the session's CSRF token."""
    client = httpx.Client(base_url=daemon.url, timeout=30)
    r = client.post("/login", json={"token": token})
    assert r.status_code == 200, r.text
    return client, str(r.json()["csrfToken"])


def no_token_in(response: httpx.Response, *tokens: str) -> None:
    for token in tokens:
        assert token not in response.text
        for name, value in response.headers.multi_items():
            assert token not in value, name


def test_form_login_sets_a_safe_cookie_and_redirects(both: Daemon) -> None:
    page = httpx.get(f"{both.url}/login")
    assert page.status_code == 200 and 'name="token"' in page.text
    assert '<label for="token">' in page.text
    r = httpx.post(
        f"{both.url}/login", data={"token": both.token, "next": "/sessions?x=1"}, timeout=30
    )
    assert r.status_code == 303 and r.headers["location"] == "/sessions?x=1"
    cookie = r.headers["set-cookie"]
    parts = [p.strip().lower() for p in cookie.split(";")]
    assert parts[0].startswith("the_loop_session=")
    assert "httponly" in parts and "samesite=strict" in parts and "path=/" in parts
    assert "secure" not in parts  # plain HTTP on loopback
    no_token_in(r, both.token, READ_ONLY)
    # the cookie authenticates the REST API
    sid = cookie.split(";")[0].split("=", 1)[1]
    got = httpx.get(f"{both.url}/api/v1/status", cookies={"the_loop_session": sid})
    assert got.status_code == 200
    no_token_in(got, both.token, READ_ONLY)


def test_next_cannot_leave_the_site(both: Daemon) -> None:
    for target in ["https://evil.example/", "//evil.example/x", "/\\evil", "javascript:x"]:
        r = httpx.post(f"{both.url}/login", data={"token": both.token, "next": target})
        assert r.status_code == 303 and r.headers["location"] == "/", target


def test_wrong_token_is_refused_and_stores_nothing(both: Daemon) -> None:
    r = httpx.post(f"{both.url}/login", json={"token": "not-the-token"})
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    assert "set-cookie" not in r.headers
    form = httpx.post(f"{both.url}/login", data={"token": "not-the-token"})
    assert form.status_code == 401 and "not valid" in form.text and 'name="token"' in form.text
    assert "set-cookie" not in form.headers
    assert httpx.post(f"{both.url}/login", json={}).status_code == 401
    assert (
        httpx.post(
            f"{both.url}/login", content=b"[1]", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    assert (
        httpx.post(
            f"{both.url}/login", content=b"{", headers={"content-type": "application/json"}
        ).status_code
        == 400
    )
    assert (
        httpx.post(
            f"{both.url}/login", content=b"x", headers={"content-type": "text/plain"}
        ).status_code
        == 400
    )
    foreign = httpx.post(
        f"{both.url}/login", json={"token": both.token}, headers={"origin": "http://evil.test"}
    )
    assert foreign.status_code == 403 and "set-cookie" not in foreign.headers
    forged = httpx.get(f"{both.url}/api/v1/status", cookies={"the_loop_session": "forged"})
    assert forged.status_code == 401


def test_cookie_writes_need_the_csrf_token(both: Daemon) -> None:
    sid = started(both)
    client, csrf = login(both, both.token)
    with closing(client):
        path = f"/api/v1/sessions/{sid}/messages"
        bare = client.post(path, json={"text": "no csrf"})
        assert bare.status_code == 403 and bare.json()["error"]["code"] == "csrf"
        wrong = client.post(path, json={"text": "x"}, headers={"X-CSRF-Token": "nope"})
        assert wrong.status_code == 403 and wrong.json()["error"]["code"] == "csrf"
        ok = client.post(path, json={"text": "hello via cookie"}, headers={"X-CSRF-Token": csrf})
        assert ok.status_code == 200, ok.text
        assert "hello via cookie" in both.work.wait_prompts(sid, 2)[1]
        assert all("no csrf" not in p for p in both.work.prompts(sid))
        # a bearer request needs no CSRF token (not an ambient credential)
        bearer = both.api("POST", f"/sessions/{sid}/messages", json={"text": "bearer"})
        assert bearer.status_code == 200
        no_token_in(ok, both.token, READ_ONLY)


def test_read_only_login_reads_only(both: Daemon) -> None:
    sid = started(both)
    client, csrf = login(both, READ_ONLY)
    with closing(client):
        assert client.get("/api/v1/sessions").status_code == 200
        r = client.post(f"/api/v1/sessions/{sid}/pause", headers={"X-CSRF-Token": csrf}, json={})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        assert both.api("GET", f"/sessions/{sid}").json()["status"] == "active"
        me = client.post("/login", json={"token": READ_ONLY}).json()
        assert me["readOnly"] is True and me["role"] == "read-only"


def test_events_stream_works_with_the_cookie(both: Daemon) -> None:
    client, _ = login(both, both.token)
    with closing(client), client.stream("GET", "/api/v1/events/stream") as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        first = next(stream.iter_lines())
        assert first.startswith("retry:")


def test_logout_invalidates_the_session(both: Daemon) -> None:
    client, csrf = login(both, both.token)
    with closing(client):
        stolen = dict(client.cookies)
        assert client.get("/api/v1/status").status_code == 200
        refused = client.post("/logout")
        assert refused.status_code == 403  # logging out also needs the CSRF token
        out = client.post("/logout", data={"csrf_token": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/login"
        assert (
            'the_loop_session=""' in out.headers["set-cookie"]
            or "Max-Age=0" in (out.headers["set-cookie"])
        )
        # the old cookie value, replayed, is worth nothing now
        again = httpx.get(f"{both.url}/api/v1/status", cookies=stolen)
        assert again.status_code == 401


def test_a_large_login_body_is_refused(both: Daemon) -> None:
    big = httpx.post(f"{both.url}/login", data={"token": "x" * 20_000}, timeout=30)
    assert big.status_code == 413 and big.json()["error"]["code"] == "payload_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked, counted as it comes
        yield b"token="
        yield b"y" * 20_000

    streamed = httpx.post(
        f"{both.url}/login",
        content=chunks(),
        headers={"content-type": "application/x-www-form-urlencoded"},
        timeout=30,
    )
    assert streamed.status_code == 413 and "set-cookie" not in streamed.headers


def test_the_cookie_is_secure_behind_https(work: Work) -> None:
    work.configure(github={"enabled": True}, server={"port": 0, "publicUrl": "https://loop.test"})
    d = Daemon(work)
    d.start()
    try:
        r = httpx.post(
            f"{d.url}/login", json={"token": d.token}, headers={"origin": "https://loop.test"}
        )
        assert r.status_code == 200, r.text
        parts = [p.strip().lower() for p in r.headers["set-cookie"].split(";")]
        assert "secure" in parts and "httponly" in parts
    finally:
        d.stop()
