"""Output a person can read (issue 28): a cost with no price reads ``unpriced`` (a null cost and
``priced: false`` in the one JSON contract, the same from the CLI and the API), the built-in
harnesses' models are priced by default, ``status`` is a short aligned summary, and nothing a
person reads is a Python repr. The real CLI in a subprocess, the real daemon over HTTP."""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.core.test_cli_remote import _twin
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.work import Work
from the_loop.store import open_database
from the_loop.store import usage as usage_store
from the_loop.store.usage import Entry

DEFAULT_MODEL = "claude-sonnet-4-5-20250929"  # what Claude Code records (the fake API's model)
DEFAULT_COST = (1200 * 3 + 340 * 15 + 50 * 3.75 + 7000 * 0.3) / 1e6  # the built-in estimate
REPR = re.compile(r"[{}\[\]]|'|\bNone\b|\bTrue\b|\bFalse\b")
"""What a Python dict, list or constant leaves in text."""


def _usage(work: Work) -> dict[str, str]:
    """Sessions on issues 15 (a default-priced model), 16 (a model nobody prices) and 17
    (both); their ids by issue."""
    for n in (15, 16, 17):
        r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start", number=n))
        assert r.exit_code == 0, r.stdout + r.stderr
    db = open_database(work.env.state_dir, work.env.database_url)
    rows = db.connect().execute("SELECT id, work_item FROM sessions").fetchall()
    ids = {str(item).rsplit("#", 1)[1]: str(sid) for sid, item in rows}
    priced = Entry("m1", "message", DEFAULT_MODEL, 1200, 340, 50, 7000)
    unknown = Entry("m2", "message", "mystery-model", 10, 20)
    with db.transaction() as tx:
        for n, entries in (("15", [priced]), ("16", [unknown]), ("17", [priced, unknown])):
            usage_store.add_entries(
                tx, ids[n], [*entries, Entry(f"t{n}", "turn")], "2026-12-01", time.time()
            )
    return ids


def _row(table: str, item: str) -> str:
    (line,) = [line for line in table.splitlines() if f"{item} " in line]
    return line


def test_costs_read_unpriced_never_zero_and_defaults_price_the_builtin_models(
    work: Work, daemon: Daemon
) -> None:
    ids = _usage(work)
    env = work.env
    for fast in (True, False):
        process_env = env.process_env()
        if not fast:  # the store read directly (a config the daemon was not started on)
            process_env["THE_LOOP_CONFIG"] = str(_twin(env))
        listed = env.run("sessions", "list", env=process_env)
        assert listed.exit_code == 0, listed.stderr
        assert f"{DEFAULT_COST:.4f}" in _row(listed.stdout, "github:octo/repo#15")
        unpriced = _row(listed.stdout, "github:octo/repo#16")
        assert " unpriced " in unpriced and "0.0000" not in unpriced, listed.stdout
        assert f"{DEFAULT_COST:.4f} + unpriced" in _row(listed.stdout, "github:octo/repo#17")

    # one contract: the CLI's JSON is the API's, a null cost and priced false
    cli = {
        s["id"]: s["usage"]
        for s in json.loads(env.run("sessions", "list", "--format", "json").stdout)
    }
    api = {s["id"]: s["usage"] for s in daemon.api("GET", "/sessions").json()}
    assert cli == api
    assert api[ids["15"]]["priced"] is True
    assert api[ids["15"]]["costUsd"] == pytest.approx(DEFAULT_COST, abs=1e-6)
    assert api[ids["16"]]["costUsd"] is None and api[ids["16"]]["priced"] is False
    assert api[ids["16"]]["unpricedModels"] == ["mystery-model"]
    assert api[ids["17"]]["costUsd"] == pytest.approx(DEFAULT_COST, abs=1e-6)
    assert api[ids["17"]]["priced"] is False

    shown = env.run("sessions", "show", "github:octo/repo#16")
    assert shown.exit_code == 0, shown.stderr
    (usage_line,) = [line for line in shown.stdout.splitlines() if line.startswith("usage ")]
    assert "1 turns, unpriced (no price for mystery-model)" in usage_line, usage_line
    assert not REPR.search(shown.stdout), shown.stdout

    used = env.run("usage", "--work-item", "github:octo/repo#16")
    assert "unpriced" in _row(used.stdout, "github:octo/repo#16") and "0.0000" not in used.stdout

    # without the built-in estimates, Claude Code's model has no price either
    work.configure(github={"enabled": True}, budgets={"defaultPrices": False})
    listed = env.run("sessions", "list")
    assert " unpriced " in _row(listed.stdout, "github:octo/repo#15"), listed.stdout
    assert f"{DEFAULT_COST:.4f}" not in listed.stdout


def test_status_is_a_short_aligned_summary_and_json_is_unchanged(
    work: Work, daemon: Daemon
) -> None:
    _usage(work)
    closed = work.dispatch("issues", P.issues_event("closed", number=17))
    assert closed.exit_code == 0, closed.stdout + closed.stderr
    shown = work.env.run("status")
    assert shown.exit_code == 0, shown.stderr
    head, *lines = shown.stdout.splitlines()
    assert re.fullmatch(r"the-loop: healthy \(pid \d+, version \S+, up \d+[smhd]\)", head), head
    assert lines and all(re.fullmatch(r"  [a-z]+: +\S.*", line) for line in lines), lines
    starts = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in lines}
    assert len(starts) == 1, f"the values line up: {lines}"
    assert "  sessions:  2 active, 1 closed" in lines
    assert not REPR.search(shown.stdout), shown.stdout
    report = json.loads(work.env.run("status", "--format", "json").stdout)
    assert report["sessions"] == {"active": 2, "closed": 1}
    assert report["healthy"] is True and isinstance(report["health"]["detail"], dict)


def test_events_show_lists_and_objects_without_reprs(work: Work) -> None:
    refused = work.dispatch(
        "issue_comment", P.issue_comment_event("the-loop start", number=5, sender="mallory")
    )
    assert refused.exit_code == 0, refused.stdout + refused.stderr
    shown = work.env.run("events", "--limit", "200")
    assert shown.exit_code == 0, shown.stderr
    payloads = [json.dumps(e["payload"]) for e in work.events("*")]
    assert any("[" in p or "{" in p for p in payloads), "some payload holds a list or object"
    assert not REPR.search(shown.stdout), shown.stdout
