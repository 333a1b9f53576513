"""The delivery gate on the screen path, with the fake agent in real tmux (its ``[y/n]`` prompt
takes the next line it reads as the answer): while the prompt is up, messages from the API,
the CLI, MCP ``say_to_session`` and the dashboard's message box are held — not one reaches the
prompt, which stays pending with its id — and after the allow each is delivered exactly once,
in order; a bare allow the notice never quoted is refused with the pending id;
``onTimeout: deny`` answers a prompt nobody answered in time; ``attention history`` lists who
answered what, from where."""

from __future__ import annotations

import getpass
import json
from contextlib import closing
from typing import Any

import pytest

from tests.api.test_dashboard_login import login
from tests.attention.test_screen import ATTENTION, explain, path, say, spawn, state
from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.helpers import wait_until
from tests.mcp.test_mcp import over_http
from tests.work import Work


def _daemon(work: Work, **attention: Any) -> Daemon:
    work.configure(attention={**ATTENTION, **attention}, github={"enabled": True})
    d = Daemon(work)
    d.start()
    return d


@pytest.fixture
def gate_daemon(work: Work) -> Any:
    d = _daemon(work)
    yield d
    d.stop()


@pytest.fixture
def timeout_daemon(work: Work) -> Any:
    d = _daemon(work, answerTimeoutMinutes=0.02, onTimeout="deny")
    yield d
    d.stop()


def _records(work: Work, ref: str, kind: str) -> list[dict[str, Any]]:
    sid = work.session_json(ref)["id"]
    return [r for r in fake_agent.read_records(work.agent_dir, sid) if r["kind"] == kind]


def _asking(d: Daemon, ref: str, command: str) -> dict[str, Any]:
    work = d.work
    wait_until(lambda: state(work, ref) == "waiting", 30, what="waiting")
    say(d, ref, f"ASK-PERMISSION: {command}")
    wait_until(lambda: state(work, ref) == "needs-permission", 30, what="needs-permission")
    return explain(work, ref)["prompt"]  # type: ignore[no-any-return]


async def test_messages_wait_behind_the_prompt_then_arrive_once_in_order(
    gate_daemon: Daemon,
) -> None:
    work = gate_daemon.work
    ref = spawn(gate_daemon, 31)
    prompt = _asking(gate_daemon, ref, "make deploy")
    sid = work.session_json(ref)["id"]

    api = gate_daemon.api("POST", f"/sessions/{path(ref)}/messages", json={"text": "HELD-A"})
    assert api.status_code == 200 and "held behind a permission prompt" in api.text, api.text
    cli = work.env.run("sessions", "say", ref, "--text", "HELD-B")
    assert cli.exit_code == 0 and "held behind a permission prompt" in cli.stdout, cli.stdout
    async with over_http(gate_daemon.url, gate_daemon.token) as client:
        mcp = await client.call_tool("say_to_session", {"session": sid, "text": "HELD-C"})
    assert "held behind a permission prompt" in str(mcp), mcp
    browser, csrf = login(gate_daemon, gate_daemon.token)
    with closing(browser):
        box = browser.post(
            f"/api/v1/sessions/{sid}/messages",
            json={"text": "HELD-D"},
            headers={"X-CSRF-Token": csrf},
        )
    assert box.status_code == 200 and "held behind a permission prompt" in box.text, box.text
    held = work.events("session.held")
    assert len(held) >= 4 and prompt["id"] in held[-1]["payload"]["reason"]
    assert _records(work, ref, "answer") == []
    assert explain(work, ref)["prompt"]["id"] == prompt["id"]
    assert (
        "Permission needed: run make deploy? [y/n]"
        in work.env.run("sessions", "logs", ref).stdout.strip().splitlines()[-1]
    )

    bare = work.env.run("sessions", "allow", ref)
    assert bare.exit_code != 0 and prompt["id"] in bare.stderr, bare.stderr
    assert "no notice quoted it" in bare.stderr
    assert "--prompt <id>" in bare.stderr  # says how to name it on the command line

    allowed = work.env.run("sessions", "allow", ref, "--prompt", prompt["id"])
    assert allowed.exit_code == 0, allowed.stderr
    wait_until(lambda: _records(work, ref, "answer"), 15, what="the answer")
    assert [(a["command"], a["answer"]) for a in _records(work, ref, "answer")] == [
        ("make deploy", "y")
    ]

    def delivered() -> list[str] | None:
        texts = [p["text"] for p in _records(work, ref, "prompt")]
        held = [t for t in texts if "HELD-" in t]
        return held if len(held) >= 4 else None

    texts = wait_until(delivered, 30, what="the held messages")
    order = [next(m for m in ("HELD-A", "HELD-B", "HELD-C", "HELD-D") if m in t) for t in texts]
    assert order == ["HELD-A", "HELD-B", "HELD-C", "HELD-D"]

    history = json.loads(work.env.run("attention", "history", ref, "--format", "json").stdout)
    assert [(p["id"], p["decision"], p["answeredBy"], p["answeredVia"]) for p in history] == [
        (prompt["id"], "allow", getpass.getuser(), "cli")
    ]


def test_on_timeout_deny_answers_the_screen_prompt(timeout_daemon: Daemon) -> None:
    work = timeout_daemon.work
    ref = spawn(timeout_daemon, 32)
    wait_until(lambda: state(work, ref) == "waiting", 30, what="waiting")
    # the prompt is up for about 1.2 s: told by its history, not by polling the CLI (on a
    # loaded host one `attention explain` can take longer than the prompt lasts)
    say(timeout_daemon, ref, "ASK-PERMISSION: rm -rf build")
    wait_until(lambda: _records(work, ref, "answer"), 30, what="the timeout's deny")
    assert [(a["command"], a["answer"]) for a in _records(work, ref, "answer")] == [
        ("rm -rf build", "n")
    ]
    history = json.loads(work.env.run("attention", "history", ref, "--format", "json").stdout)
    assert len(history) == 1 and "rm -rf build" in history[0]["text"], history
    assert (history[0]["decision"], history[0]["answeredVia"]) == ("deny", "timeout")
