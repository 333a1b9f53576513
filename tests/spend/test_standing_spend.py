"""Budgets and idle suspend of standing sessions, under the daemon, with the fake agent in real
tmux: an idle standing session is suspended (harness stopped, pane kept, status ``suspended``)
and the next ``say`` resumes the same conversation and delivers the message once; one that
needs permission is never suspended; a per-session budget stops one at the end of the turn
that crossed it (``over-budget``, one notice in its Slack thread), ``say`` and ``start`` are
refused naming the budget and ``standing extend``, and ``extend`` resumes it.

The fake agent records no usage: the budget test writes a Claude Code transcript for it and
reports the transcript's path through the real ``the-loop hook``, as Claude Code's hooks do."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.attention.hooks import hook_env, issue, run_hook
from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.fakes.fake_slack import FakeSlack
from tests.helpers import wait_until
from tests.slack.conftest import CHANNEL, Slack, slack_section, start
from tests.spend.test_meter import assistant, lines, prompt
from tests.spend.test_suspend import ATTENTION
from tests.work import Work
from the_loop import TheLoop
from the_loop.context import open_ctx
from the_loop.errors import Conflict
from the_loop.standing import spend as standing_spend
from the_loop.store import attention as attention_store
from the_loop.store import usage as usage_store

SUSPEND_MINUTES = 0.02  # 1.2 s
TARGET = "loop-standing-{}"


def view(d: Daemon, name: str) -> dict[str, Any]:
    found = d.api("GET", f"/standing/{name}")
    assert found.status_code == 200, found.text
    return found.json()  # type: ignore[no-any-return]


def conversation(d: Daemon, name: str) -> str:
    found = wait_until(lambda: view(d, name).get("conversationId"), 30, what=f"{name} started")
    assert isinstance(found, str)
    return found


def events(d: Daemon, type_: str) -> list[dict[str, Any]]:
    return d.api("GET", "/events", params={"type": type_}).json()  # type: ignore[no-any-return]


def wait_suspended(d: Daemon, name: str, what: str) -> None:
    """Wait until standing session NAME is suspended; on a timeout, say what it was doing (its
    view, and the attention and standing events that name it)."""
    try:
        wait_until(lambda: view(d, name)["status"] == "suspended", 30, what=what)
    except AssertionError as exc:
        found = view(d, name)
        named = d.api("GET", "/events", params={"standing": name, "limit": 30}).json()
        seen = [(e["ts"], e["type"], e.get("payload")) for e in named]
        shown = {k: found.get(k) for k in ("status", "hold", "attention")}
        raise AssertionError(f"{exc}\nview: {shown}\nevents: {seen}") from None


@pytest.fixture
def idle_daemon(work: Work) -> Any:
    declared = [{"name": "helper", "prompt": "watch"}, {"name": "asker", "prompt": "ask"}]
    work.configure(
        attention=ATTENTION,
        sessions={"suspendAfterMinutes": SUSPEND_MINUTES},
        standing={"enabled": True, "sessions": declared},
        tmux={"resumeProbeSeconds": 0.2},
    )
    d = Daemon(work)
    d.start()
    yield d
    d.stop()
    work.cli("standing", "stop")


def test_idle_standing_session_suspended_and_resumed_by_say_once(idle_daemon: Daemon) -> None:
    d, work = idle_daemon, idle_daemon.work
    helper = conversation(d, "helper")
    work.wait_prompts(helper, 1, timeout=30)

    wait_suspended(d, "helper", "suspended")
    found = view(d, "helper")
    assert found["hold"] == "suspended" and found["attention"]["state"] == "suspended"
    wait_until(lambda: work.pane_dead(TARGET.format("helper")) == "1", 30, what="pane dead")
    suspended = events(d, "standing.suspended")
    assert suspended and "suspendAfterMinutes" in suspended[0]["payload"]["reason"]
    listed = json.loads(work.cli("standing", "list", "--format", "json").stdout)
    assert {r["name"]: r["status"] for r in listed}["helper"] == "suspended"
    table = work.cli("standing", "list").stdout
    assert "suspended" in table
    status = work.env.run("status", "--format", "json")
    assert status.exit_code == 0, status.stdout  # a suspended auto-start session is healthy
    assert json.loads(status.stdout)["health"]["detail"]["standing"]["helper"] == "suspended"

    client, _csrf = logged_in(d, d.token)  # the dashboard says so and still takes a message
    card = client.get("/standing").text.split('id="standing-helper"')[1].split("</li>")[0]
    assert "badge-suspended" in card and "(resumes it)" in card
    assert re.search(r'<input id="say-helper"[^>]*>', card) and " disabled" not in card
    page = client.get("/standing/helper").text
    assert "Suspended while idle" in page and 'id="msg-text"' in page

    said = work.cli("standing", "say", "helper", "--text", "WAKE-UP-PROMPT now")
    assert said.exit_code == 0, said.stdout + said.stderr
    prompts = work.wait_prompts(helper, 2, timeout=30)
    assert sum("WAKE-UP-PROMPT" in p for p in prompts) == 1
    starts = fake_agent.read_starts(work.agent_dir, helper)
    assert [s.resumed for s in starts] == [False, True], "the same conversation, resumed"
    assert view(d, "helper")["conversationId"] == helper
    woken = [e for e in events(d, "standing.woken") if e["standing"] == "helper"]
    assert len(woken) == 1 and woken[0]["payload"]["hold"] == "suspended"

    # asleep again once idle; a message through the API wakes it the same way
    wait_suspended(d, "helper", "suspended again")
    sent = d.api("POST", "/standing/helper/messages", json={"text": "SECOND-WAKE"})
    assert sent.status_code == 200, sent.text
    prompts = work.wait_prompts(helper, 3, timeout=30)
    assert sum("WAKE-UP-PROMPT" in p for p in prompts) == 1 and "SECOND-WAKE" in prompts[-1]

    # a stop ends the suspension: stopped, not suspended; a start resumes it
    wait_suspended(d, "helper", "suspended again")
    assert work.cli("standing", "stop", "helper").exit_code == 0
    assert view(d, "helper")["status"] == "stopped" and view(d, "helper")["hold"] is None


def test_a_standing_session_needing_permission_is_never_suspended(idle_daemon: Daemon) -> None:
    d, work = idle_daemon, idle_daemon.work
    asker = conversation(d, "asker")
    work.wait_prompts(asker, 1, timeout=30)
    asked = work.cli("standing", "say", "asker", "--text", "ASK-PERMISSION: ls")
    assert asked.exit_code == 0, asked.stdout + asked.stderr
    wait_until(
        lambda: view(d, "asker")["attention"]["state"] == "needs-permission", 30, what="asks"
    )
    limit = SUSPEND_MINUTES * 60

    def asker_suspended() -> int:  # it may have slept before the question: count from here
        return len([e for e in events(d, "standing.suspended") if e["standing"] == "asker"])

    before = asker_suspended()
    wait_until(lambda: view(d, "helper")["status"] == "suspended", 30, what="the pass runs")

    def waiting() -> float:
        found = d.api("GET", "/attention/standing:asker")
        return float(found.json()["waitingSeconds"]) if found.status_code == 200 else 0.0

    wait_until(lambda: waiting() > 3 * limit, 30, what="a long wait")
    assert asker_suspended() == before
    found = view(d, "asker")
    assert found["status"] == "running" and found["hold"] is None
    assert found["attention"]["state"] == "needs-permission"
    assert work.pane_dead(TARGET.format("asker")) == "0"


# --- budgets --------------------------------------------------------------------------------

PRICE = {"input": 1.0, "output": 0.0}  # USD per million: 300k input tokens = $0.30
MODEL = "fake-model-1"


def report_transcript(work: Work, name: str, path: Path) -> None:
    """What Claude Code's hooks do on every turn: tell the-loop where its transcript is. The
    fake agent reads its screen (no hooks): its token is issued here as a spawn issues one,
    its harness directory the one holding PATH."""
    agent = f"standing:{name}"
    token = issue(work.env, agent, root=path.parent)
    done = run_hook(
        hook_env(work.env, token, agent=agent),
        {"hook_event_name": "Stop", "transcript_path": str(path)},
    )
    assert done.returncode == 0 and done.stderr == "", done.stderr


def turn(path: Path, n: int) -> None:
    with path.open("a") as handle:
        handle.write(
            lines(
                prompt(f"p{n}", f"prompt {n}"),
                assistant(f"msg_{n}", MODEL, input_tokens=300_000, output_tokens=10),
            )
        )


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    with FakeSlack() as fake:
        yield fake


def test_budget_stops_a_standing_session_say_refused_extend_resumes(
    work: Work, fake_slack: FakeSlack, tmp_path: Path
) -> None:
    name = "ops"
    work.configure(
        attention=ATTENTION,
        sessions={"suspendAfterMinutes": 0},
        budgets={"prices": {MODEL: PRICE}, "perSessionUsd": 0.5},
        slack=slack_section(fake_slack),
        standing={
            "enabled": True,
            "sessions": [{"name": name, "prompt": "watch", "slack": {"enabled": True}}],
        },
        tmux={"resumeProbeSeconds": 0.2},
    )
    d = start(work, fake_slack)
    try:
        ops = conversation(d, name)
        work.wait_prompts(ops, 1, timeout=30)
        transcript = tmp_path / "claude-config" / "ops.jsonl"
        transcript.parent.mkdir()
        turn(transcript, 1)
        report_transcript(work, name, transcript)
        wait_until(lambda: view(d, name)["usage"]["costUsd"] == 0.3, 30, what="metered")
        assert view(d, name)["usage"]["turns"] == 1
        client, _csrf = logged_in(d, d.token)  # said as a person would
        assert "1 turn, $0.30" in client.get(f"/standing/{name}").text
        wait_until(lambda: view(d, name)["attention"]["state"] == "waiting", 30)
        assert view(d, name)["status"] == "running", "one turn is under the budget"

        assert work.cli("standing", "say", name, "--text", "SECOND-PROMPT").exit_code == 0
        work.wait_prompts(ops, 2, timeout=30)
        turn(transcript, 2)
        wait_until(lambda: view(d, name)["status"] == "over-budget", 30, what="the budget stop")
        found = view(d, name)
        assert found["hold"] == "over-budget" and found["usage"]["costUsd"] == 0.6
        assert "standing extend ops" in found["note"]
        wait_until(lambda: work.pane_dead(TARGET.format(name)) == "1", 30, what="pane dead")
        stopped = events(d, "standing.over_budget")
        assert len(stopped) == 1 and "perSessionUsd" in stopped[0]["payload"]["reason"]

        def notices() -> list[str]:
            return [m.text for m in fake_slack.posts(CHANNEL) if "stopped at the end" in m.text]

        wait_until(notices, 30, what="the notice in the thread")
        assert "the-loop standing extend ops" in notices()[0]

        refused = work.cli("standing", "say", name, "--text", "THIRD-PROMPT")
        assert refused.exit_code == 2
        assert "over budget" in refused.stderr and "standing extend ops" in refused.stderr
        api = d.api("POST", f"/standing/{name}/messages", json={"text": "THIRD-PROMPT"})
        assert api.status_code == 409 and "standing extend" in api.json()["error"]["message"]
        slack = Slack(d, fake_slack)
        thread = slack.announcement(f"*{name}*").ts
        assert slack.reply("THIRD-PROMPT from slack", thread).status_code == 200
        assert slack.dropped("standing-refused")["standing"] == name
        wait_until(
            lambda: [m for m in fake_slack.posts(CHANNEL) if "standing extend ops" in m.text][1:],
            30,
            what="the refusal in the thread",
        )
        started = work.cli("standing", "start", name)
        assert started.exit_code == 2 and "standing extend ops" in started.stderr
        assert not any("THIRD-PROMPT" in p for p in work.prompts(ops))
        assert work.pane_dead(TARGET.format(name)) == "1"

        short = work.cli("standing", "extend", name, "--usd", "0.05")
        assert short.exit_code == 0 and "still over budget" in short.stdout
        turns = TheLoop(work.env.config_path).standing.extend(name, turns=3)  # the SDK
        assert turns.extra_turns == 3 and "perSessionUsd" in (turns.over_budget or "")
        done = d.api("POST", f"/standing/{name}/extend", json={"usd": 1})
        assert done.status_code == 200, done.text
        assert done.json()["overBudget"] is None and done.json()["extraUsd"] == 1.05
        assert done.json()["resumed"]["outcome"] == "resumed"
        assert view(d, name)["status"] == "running" and view(d, name)["hold"] is None
        starts = fake_agent.read_starts(work.agent_dir, ops)
        assert [s.resumed for s in starts] == [False, True]
        assert work.cli("standing", "say", name, "--text", "FOURTH-PROMPT").exit_code == 0
        prompts = work.wait_prompts(ops, 3, timeout=30)
        assert "FOURTH-PROMPT" in prompts[-1] and not any("THIRD" in p for p in prompts)
        assert len(notices()) == 1
    finally:
        d.stop()
        work.cli("standing", "stop")


def test_stop_and_delete_end_a_suspension_over_budget_stays(loop_env: Env) -> None:
    """On a real database: a stop or a delete lifts ``suspended`` and releases the attention
    state it held (``exited``), so the screen detector and the spend pass see the next start
    afresh; over-budget stays through both (decision 0050: a name's budget is not renewed by
    deleting it)."""
    loop_env.write_config()
    ctx = open_ctx(loop_env.config_path)
    key = standing_spend.key_of("ops")

    def hold(kind: str) -> None:
        with ctx.db.transaction() as tx:
            usage_store.set_hold(tx, key, kind, "why", time.time())
            attention_store.set_state(
                tx, key, kind, "spend", "why", now=time.time(), source="spend", standing="ops"
            )

    def state() -> tuple[str | None, str]:
        row = attention_store.get(ctx.db.connect(), key)
        return standing_spend.hold_of(ctx, "ops").hold, row.state if row else ""

    hold("over-budget")
    standing_spend.after_stop(ctx, "ops")
    assert state() == ("over-budget", "over-budget")
    with pytest.raises(Conflict, match="standing extend ops"):
        standing_spend.refuse_over_budget(ctx, "ops")
    standing_spend.forget(ctx, "ops")
    assert state() == ("over-budget", "over-budget")
    with ctx.db.transaction() as tx:
        usage_store.clear_hold(tx, key)
    hold("suspended")
    standing_spend.forget(ctx, "ops")
    assert state() == (None, "exited")
    hold("suspended")
    standing_spend.after_stop(ctx, "ops")
    assert state() == (None, "exited")
    standing_spend.refuse_over_budget(ctx, "ops")
