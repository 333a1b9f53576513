"""Signed webhooks over HTTP into the durable inbox, processed by the daemon's worker."""

from __future__ import annotations

import json

import httpx

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until

REF = "github:octo/repo#15"


def inbox(daemon: Daemon, status: str | None = None) -> list[dict[str, object]]:
    args = ["inbox", "list", "--format", "json"] + (["--status", status] if status else [])
    return json.loads(daemon.work.cli(*args).stdout)  # type: ignore[no-any-return]


def test_valid_signed_delivery_is_accepted_and_processed(daemon: Daemon) -> None:
    r = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "w-1")
    assert r.status_code == 202 and r.json()["accepted"] is True
    wait_until(lambda: inbox(daemon, "succeeded"), timeout=20)
    sid = daemon.work.session_json(REF)["id"]
    assert "fix it" in daemon.work.wait_prompts(sid, 1)[0]
    again = daemon.post("issue_comment", P.issue_comment_event("the-loop do fix it"), "w-1")
    assert again.status_code == 202 and again.json()["duplicate"] is True
    daemon.post("issue_comment", P.issue_comment_event("second"), "w-2")
    wait_until(lambda: len(inbox(daemon, "succeeded")) == 2, timeout=20)
    # a succeeded delivery was handed to the agent; the fake agent records it when it reads it
    texts = daemon.work.wait_prompts(sid, 2)
    assert len(texts) == 2 and "second" in texts[1]


def test_bad_signatures_size_and_json_are_refused(daemon: Daemon) -> None:
    payload = P.issue_comment_event("the-loop do fix it")
    assert daemon.post("issue_comment", payload, "w-bad", secret="wrong").status_code == 401
    missing = daemon.post("issue_comment", payload, "w-none", secret=None)
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "unauthorized"
    bad_json = daemon.post("issue_comment", None, "w-json", body=b"{nope")
    assert bad_json.status_code == 400
    huge = daemon.post("issue_comment", None, "w-huge", body=b"x" * (25 * 1024 * 1024 + 1))
    assert huge.status_code == 413
    no_event = daemon.post("", payload, "w-noevent")
    assert no_event.status_code == 400
    ping = daemon.post("ping", {"zen": "Keep it simple."}, "w-ping")
    assert ping.status_code == 200
    assert inbox(daemon) == []
    rejected = daemon.work.events("webhook.rejected")
    assert len(rejected) >= 5
    assert daemon.work.cli("sessions", "list", "--format", "json").stdout.strip() == "[]"


def test_any_signed_event_type_is_acknowledged_and_ignored(daemon: Daemon) -> None:
    r = daemon.post(
        "push", {"ref": "refs/heads/main", "repository": {"full_name": "octo/repo"}}, "w-push"
    )
    assert r.status_code == 202
    wait_until(lambda: inbox(daemon, "succeeded"), timeout=20)
    assert daemon.work.events("route.ignored")


def test_other_methods_on_the_intake_paths_are_fastapis_answers(daemon: Daemon) -> None:
    """The intake routes are served directly (``web.direct``) for POST only: anything else on
    their paths gets the app's own answer, as before."""
    for path in ("/webhooks/github", "/webhooks/slack", "/webhooks/slack/interactions"):
        got = httpx.get(f"{daemon.url}{path}", timeout=10)
        assert got.status_code == 405, (path, got.text)
        assert got.json()["error"]["code"] == "method_not_allowed"
    assert httpx.post(f"{daemon.url}/webhooks/github/", timeout=10).status_code == 404
    slack = httpx.post(f"{daemon.url}/webhooks/slack", content=b"{}", timeout=10)
    assert slack.status_code == 404 and "slack.enabled is off" in slack.text
