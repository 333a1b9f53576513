"""Starting by hand with the real Claude Code (pinned in node_modules) against the fake
Messages API: `the-loop sessions start` on a local item, and the dashboard's start form (over
HTTP, logged in, with the CSRF token), each reaching a working agent."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN
from tests.helpers import wait_until
from tests.work import Work

pytestmark = [
    pytest.mark.claude,
    pytest.mark.slow,
    pytest.mark.timeout(300),
]


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@pytest.fixture
def site(work: Work, api: FakeAnthropic) -> Iterator[Daemon]:
    env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(work.env.root / "home")}
    work.configure(
        harnesses={"claude": {"binary": str(CLAUDE_BIN), "env": env}},
        routing={"defaultHarness": "claude"},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def answered(api: FakeAnthropic, text: str) -> bool:
    return any(text in (r.prompt or "") for r in api.conversation_requests())


def test_sessions_start_reaches_the_real_claude_code(
    work: Work, site: Daemon, api: FakeAnthropic
) -> None:
    result = work.env.run("sessions", "start", "local:stars", "--prompt", "count the stars")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.startswith("spawned local:stars"), result.stdout
    wait_until(lambda: answered(api, "count the stars"), 120, what="the prompt at the model")
    wait_until(
        lambda: "FAKE-REPLY" in work.env.run("sessions", "logs", "local:stars").stdout,
        60,
        what="the model's reply on the agent's screen",
    )
    shown = work.session_json("local:stars")
    assert (shown["harness"], shown["status"]) == ("claude", "active")


def test_the_dashboard_form_starts_the_real_claude_code(
    work: Work, site: Daemon, api: FakeAnthropic
) -> None:
    client = httpx.Client(base_url=site.url, timeout=60)
    login = client.post("/login", json={"token": site.token})
    assert login.status_code == 200, login.text
    csrf = str(login.json()["csrfToken"])
    page = client.get("/")
    assert 'data-api="/api/v1/sessions"' in page.text and 'name="prompt"' in page.text
    body = {"ref": "local:planets", "prompt": "name the planets", "harness": "claude"}
    refused = client.post("/api/v1/sessions", json=body)  # no CSRF token: refused, nothing runs
    assert refused.status_code == 403, refused.text
    bad = client.post(
        "/api/v1/sessions", json={**body, "ref": "local:-x"}, headers={"X-CSRF-Token": csrf}
    )
    assert bad.status_code == 400 and "local:NAME" in bad.json()["error"]["message"], bad.text
    done = client.post("/api/v1/sessions", json=body, headers={"X-CSRF-Token": csrf})
    assert done.status_code == 200, done.text
    assert done.json()["action"] == "spawned" and done.json()["workItem"] == "local:planets"
    wait_until(lambda: answered(api, "name the planets"), 120, what="the prompt at the model")
    again = client.post(
        "/api/v1/sessions",
        json={**body, "prompt": "and their moons"},
        headers={"X-CSRF-Token": csrf},
    )
    assert again.status_code == 200 and again.json()["action"] == "delivered", again.text
    wait_until(lambda: answered(api, "and their moons"), 120, what="the second prompt")
    listed = site.api("GET", "/sessions").json()
    assert [s["workItem"] for s in listed] == ["local:planets"]
