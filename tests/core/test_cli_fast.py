"""The fast path of ``sessions list``, ``events`` and ``status`` (``the_loop.cli.fast``,
decision 0033) prints exactly what the full CLI prints, byte for byte and with the same exit
code, over one state with live and closed sessions, usage priced by prefix, attention, events
of every level and a running daemon; it is really taken (typer and pydantic never load); and
whatever it does not know for certain goes to the full CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.work import Work
from the_loop.cli.fast import DISABLE_ENV
from the_loop.store import attention as attention_store
from the_loop.store import open_database
from the_loop.store import usage as usage_store
from the_loop.store.usage import Entry

AGE = re.compile(r"\b\d+[smhd] ago")
PROBE = (
    "import sys\n"
    "from the_loop.cli import main\n"
    "try:\n"
    "    main.run(sys.argv[1:])\n"
    "finally:\n"
    "    sys.stderr.write(f\"\\nLOADED typer={'typer' in sys.modules}"
    " pydantic={'pydantic' in sys.modules}\\n\")\n"
)


def _run(env: Env, args: list[str], fast: bool) -> tuple[int, str, str, str]:
    """Exit code, stdout, stderr (without the probe line) and the probe line of ARGS."""
    process_env = env.process_env()
    if not fast:
        process_env[DISABLE_ENV] = "1"
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=process_env,
        cwd=env.root,
        timeout=60,
    )
    err, _, probe = proc.stderr.rpartition("\nLOADED ")
    return proc.returncode, proc.stdout, err, probe.strip()


def _ageless(answer: tuple[int, str, str]) -> tuple[int, str, str]:
    """ANSWER with every ``12s ago`` as ``N ago`` (the two runs are a moment apart)."""
    code, out, err = answer
    return code, AGE.sub("N ago", out), err


def _steady(text: str) -> list[str]:
    """TEXT without what changes from one moment to the next (uptime, free memory)."""
    lines = [re.sub(r", up \d+[smhd]\)$", ")", line) for line in text.splitlines()]
    return [re.sub(r"\d+ MiB available", "N MiB available", line) for line in lines]


def _state(work: Work) -> None:
    """Three work items (one closed), usage of a priced and an unpriced model, attention."""
    for n in (15, 16, 17):
        r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start", number=n))
        assert r.exit_code == 0, r.stdout + r.stderr
    closed = work.dispatch("issues", P.issues_event("closed", number=17))
    assert closed.exit_code == 0, closed.stdout + closed.stderr
    db = open_database(work.env.state_dir)
    ids = [str(r[0]) for r in db.connect().execute("SELECT id FROM sessions ORDER BY created_at")]
    now = time.time()
    with db.transaction() as tx:
        usage_store.add_entries(
            tx,
            ids[0],
            [
                Entry("m1", "message", "claude-sonnet-4-5-20250929", 1200, 340, 50, 7000),
                Entry("m2", "message", "mystery-model", 10, 20),
                Entry("t1", "turn"),
                Entry("t2", "turn"),
            ],
            "2026-12-01",
            now,
        )
        for agent, item in ((ids[0], "github:octo/repo#15"), (ids[2], "github:octo/repo#17")):
            attention_store.register(
                tx, agent, work_item=item, standing=None, harness="fake", requester="alice", now=now
            )


@pytest.fixture
def state(work: Work) -> Work:
    work.configure(
        budgets={"prices": {"claude-sonnet": {"input": 3, "output": 15, "cacheRead": 0.3}}}
    )
    _state(work)
    return work


COMMANDS = [
    ["sessions", "list"],
    ["sessions", "list", "--status", "active"],
    ["sessions", "list", "--status=closed", "--limit", "1"],
    ["sessions", "list", "--status", "paused"],
    ["events"],
    ["events", "--limit", "5", "--format", "json"],
    ["events", "-n", "7", "--format", "jsonl"],
    ["events", "--type", "session.*", "-t", "dispatch.*", "--limit=500"],
    ["events", "--level", "warning", "--format", "json"],
    ["events", "--type", "no.such.*"],
]


def test_every_form_prints_what_the_full_cli_prints(state: Work) -> None:
    env = state.env
    assert _run(env, ["sessions", "list"], fast=False)[0] == 0  # the facts are stored
    for args in COMMANDS:
        full = _run(env, args, fast=False)
        fast = _run(env, args, fast=True)
        assert full[3] == "typer=True pydantic=True", (args, full)
        assert fast[3] == "typer=False pydantic=False", (args, fast)
        assert _ageless(fast[:3]) == _ageless(full[:3]), args
    listed = _run(env, ["sessions", "list"], fast=True)[1]
    assert "0.0108" in listed  # (1200*3 + 340*15 + 7000*0.3) per million, by the prefix's price
    assert "exited" in listed  # the closed session's attention


def test_status_of_a_running_daemon_matches(state: Work, daemon: Daemon) -> None:
    env = state.env
    for args in (["status"], ["status", "--format", "json"]):
        full = _run(env, args, fast=False)
        fast = _run(env, args, fast=True)
        assert fast[3] == "typer=False pydantic=False", fast
        assert fast[0] == full[0] == 0, (full, fast)
        if args[-1] == "json":
            ignore = ("uptimeSeconds",)
            a, b = json.loads(full[1]), json.loads(fast[1])
            for key in ignore:
                a.pop(key, None), b.pop(key, None)
            assert a["health"]["status"] == b["health"]["status"] == "ok"
            assert a.keys() == b.keys() and a["sessions"] == b["sessions"]
            assert a["pid"] == b["pid"] == daemon.proc.pid  # type: ignore[union-attr]
        else:
            assert _steady(fast[1]) == _steady(full[1])
            assert "  sessions:  2 active, 1 closed" in fast[1]


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "list", "--format", "json"],
        ["sessions", "list", "--status", "bogus"],
        ["sessions", "list", "--limit", "0"],
        ["sessions", "list", "--help"],
        ["events", "--since", "1h"],
        ["events", "--level", "loud"],
        ["events", "--limit", "100001"],
        ["--debug", "events"],
        ["status"],  # no daemon: the full CLI reports from the database
    ],
)
def test_what_it_does_not_know_goes_to_the_full_cli(state: Work, args: list[str]) -> None:
    env = state.env
    assert _run(env, ["sessions", "list"], fast=False)[0] == 0
    fast = _run(env, args, fast=True)
    full = _run(env, args, fast=False)
    assert fast[3] == "typer=True pydantic=True", fast
    assert _ageless(fast[:3]) == _ageless(full[:3])


def test_a_changed_config_or_a_pending_migration_goes_to_the_full_cli(state: Work) -> None:
    env = state.env
    assert _run(env, ["sessions", "list"], fast=False)[0] == 0
    assert _run(env, ["sessions", "list"], fast=True)[3] == "typer=False pydantic=False"
    env.config_path.write_text(env.config_path.read_text() + "\n# a changed byte\n")
    assert _run(env, ["sessions", "list"], fast=True)[3] == "typer=True pydantic=True"
    assert _run(env, ["sessions", "list"], fast=True)[3] == "typer=False pydantic=False"
    db = open_database(env.state_dir)
    with db.transaction() as tx:  # a migration this version does not know (a newer one's)
        tx.execute("INSERT INTO schema_migrations (name, applied_at) VALUES ('9999_future', 0)")
    assert _run(env, ["sessions", "list"], fast=True)[3] == "typer=True pydantic=True"


@pytest.fixture
def standing_daemon(work: Work) -> Iterator[Daemon]:
    """A running daemon with declared standing sessions that do not start by themselves (one
    with a problem), beside the work items."""
    work.configure(
        github={"enabled": True},
        standing={
            "enabled": True,
            "sessions": [
                {"name": "supervisor", "prompt": "watch the queue", "autoStart": False},
                {"name": "broken", "promptFile": "missing-brief.md", "autoStart": False},
            ],
        },
    )
    _state(work)
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def test_standing_list_of_a_running_daemon_matches(standing_daemon: Daemon) -> None:
    daemon = standing_daemon
    env = daemon.work.env
    created = daemon.api(
        "POST", "/standing", json={"name": "helper", "prompt": "tidy the docs", "start": True}
    )
    assert created.status_code == 201, created.text
    full = _run(env, ["standing", "list"], fast=False)
    fast = _run(env, ["standing", "list"], fast=True)
    assert full[3] == "typer=True pydantic=True", full
    assert fast[3] == "typer=False pydantic=False", fast
    assert _ageless(fast[:3]) == _ageless(full[:3])
    listed = fast[1]
    assert re.search(r"^helper +created +running", listed, re.M), listed
    assert re.search(r"^supervisor +declared +absent", listed, re.M), listed
    assert "note: broken: " in listed  # its problem, as the full CLI says it


def test_standing_list_under_another_config_than_the_daemons_goes_to_the_full_cli(
    standing_daemon: Daemon,
) -> None:
    env = standing_daemon.work.env
    assert _run(env, ["standing", "list"], fast=True)[3] == "typer=False pydantic=False"
    other = env.root / "other.yaml"
    other.write_text(env.config_path.read_text() + "\n# not what the daemon read\n")
    args = ["--config", str(other), "standing", "list"]
    assert _run(env, args, fast=False)[0] == 0  # its facts are stored: only the daemon differs
    fast = _run(env, args, fast=True)
    assert fast[3] == "typer=True pydantic=True", fast
    assert _run(env, ["standing", "list", "--format", "json"], fast=True)[3].startswith(
        "typer=True"
    )
