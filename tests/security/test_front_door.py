"""Authenticate before reading (issue 29 item 1, SPEC §11): over real HTTP to the real daemon,
a token-less request is answered 401 from its headers, before any of its body is read (a
50 MB post leaves the daemon's memory where it was; malformed JSON is 401, not 422); an
authenticated body is bounded in size (413) and in time (408)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.daemon import Daemon
from tests.security.raw import rss_bytes, send_big_body, trickle
from tests.work import Work

pytestmark = pytest.mark.security

BODY_SECONDS = 2.0
API_BODY = 64 * 1024
MESSAGES = "/api/v1/sessions/github:octo/repo%2315/messages"


@pytest.fixture
def door(work: Work) -> Iterator[Daemon]:
    work.configure(
        github={"enabled": True},
        server={"port": 0, "limits": {"bodySeconds": BODY_SECONDS, "apiBodyBytes": API_BODY}},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def test_a_tokenless_50_mb_post_is_401_and_costs_no_memory(door: Daemon) -> None:
    assert door.proc is not None
    before = rss_bytes(door.proc.pid)
    for path in (MESSAGES, "/api/v1/standing", "/mcp"):
        status = send_big_body(door, path, 50 * 1024 * 1024, {"Content-Type": "application/json"})
        assert status == 401, path
    grown = rss_bytes(door.proc.pid) - before
    assert grown < 10 * 1024 * 1024, f"RSS grew by {grown / 1e6:.1f} MB"
    assert door.api("GET", "/health").status_code == 200


def test_malformed_json_is_401_without_a_token_and_422_with_one(door: Daemon) -> None:
    bad = {"content": b"{not json", "headers": {"Content-Type": "application/json"}}
    anonymous = door.api("POST", "/standing", token=None, **bad)
    assert anonymous.status_code == 401
    assert anonymous.json()["error"]["code"] == "unauthorized"
    wrong = door.api("POST", "/standing", token="not-the-token", **bad)
    assert wrong.status_code == 401
    assert door.api("POST", "/standing", **bad).status_code == 422


def test_an_authenticated_body_over_the_limit_is_413(door: Daemon) -> None:
    auth = {"Authorization": f"Bearer {door.token}", "Content-Type": "application/json"}
    assert send_big_body(door, "/api/v1/standing", 5 * API_BODY, auth) == 413

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams
        yield b'{"name": "'
        for _ in range(4):
            yield b"a" * API_BODY
        yield b'"}'

    r = httpx.post(f"{door.url}/api/v1/standing", content=chunks(), headers=auth, timeout=30)
    assert r.status_code == 413
    assert r.json()["error"]["code"] == "payload_too_large"
    small = json.dumps({"name": "UPPER"}).encode()
    assert door.api("POST", "/standing", content=small).status_code in (400, 422)


def test_a_trickled_body_is_408_within_the_deadline(door: Daemon) -> None:
    auth = {"Authorization": f"Bearer {door.token}", "Content-Type": "application/json"}
    status, took = trickle(door, "/api/v1/standing", auth, declared=1000, every=0.25)
    assert status == 408
    assert BODY_SECONDS - 0.5 < took < BODY_SECONDS + 3
    status, took = trickle(door, "/api/v1/standing", {}, declared=1000, every=0.25)
    assert status == 401 and took < 1.0  # no token: answered from the headers at once


def test_logins_and_logouts_keep_working_through_the_door(door: Daemon) -> None:
    with httpx.Client(base_url=door.url, timeout=10) as client:
        r = client.post("/login", json={"token": door.token})
        assert r.status_code == 200
        csrf = r.json()["csrfToken"]
        assert client.get("/api/v1/sessions").status_code == 200  # by the cookie
        big = client.post("/login", content=b"t" * 20_000)
        assert big.status_code == 413
        out = client.post("/logout", headers={"X-CSRF-Token": csrf}, follow_redirects=False)
        assert out.status_code == 303
        assert client.get("/api/v1/sessions").status_code == 401
