"""Logins bounded (issue 29 item 3, SPEC §11): over real HTTP, 2,000 read-only logins leave a
full login working (separate bounded pools), and login attempts are rate-limited per client
and overall (429, before the body is read)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.daemon import Daemon
from tests.work import Work

pytestmark = pytest.mark.security

READ_ONLY = "r" * 40


def _daemon(work: Work, **limits: Any) -> Daemon:
    work.configure(github={"enabled": True}, server={"port": 0, "limits": limits})
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    return d


@pytest.fixture
def roomy(work: Work) -> Iterator[Daemon]:
    d = _daemon(work, loginsPerMinutePerClient=10_000, loginsPerMinute=10_000)
    yield d
    d.stop()


def test_read_only_logins_never_evict_a_full_one(roomy: Daemon) -> None:
    with httpx.Client(base_url=roomy.url, timeout=10) as full:
        login = full.post("/login", json={"token": roomy.token})
        assert login.status_code == 200
        csrf = login.json()["csrfToken"]
        with httpx.Client(base_url=roomy.url, timeout=10) as other:
            for _ in range(2000):
                assert other.post("/login", json={"token": READ_ONLY}).status_code == 200
                other.cookies.clear()
        assert full.get("/api/v1/sessions").status_code == 200  # still logged in
        created = full.post(
            "/api/v1/standing",
            json={"name": "still-full", "start": False},
            headers={"X-CSRF-Token": csrf},
        )
        assert created.status_code == 201, created.text  # and still the full role


def test_login_attempts_are_rate_limited_per_client(work: Work) -> None:
    d = _daemon(work, loginsPerMinutePerClient=20, loginsPerMinute=10_000)
    try:
        statuses = [
            httpx.post(f"{d.url}/login", json={"token": "wrong"}, timeout=10).status_code
            for _ in range(25)
        ]
        assert statuses[:20] == [401] * 20 and statuses[20:] == [429] * 5
        late = httpx.post(f"{d.url}/login", json={"token": d.token}, timeout=10)
        assert late.status_code == 429 and late.headers["retry-after"] == "60"
    finally:
        d.stop()


def test_login_attempts_are_rate_limited_overall(work: Work) -> None:
    d = _daemon(work, loginsPerMinutePerClient=1000, loginsPerMinute=15)
    try:
        sent = [
            httpx.post(f"{d.url}/login", json={"token": "wrong"}, timeout=10).status_code
            for _ in range(18)
        ]
        assert sent.count(429) == 3
    finally:
        d.stop()
