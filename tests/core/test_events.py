"""The event log: catalogue, filters, concurrent writers from two processes, follow, pruning."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import BACKENDS, Env
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.store import open_database


@pytest.fixture(params=BACKENDS)
def state_backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on SQLite and on PostgreSQL."""
    return str(request.param)


MINIMUM = [
    "webhook.received",
    "webhook.rejected",
    "webhook.duplicate",
    "route.ignored",
    "route.unauthorized",
    "dispatch.queued",
    "dispatch.succeeded",
    "dispatch.failed",
    "dispatch.dead_lettered",
    "session.spawned",
    "session.spawn_failed",
    "session.delivered",
    "session.respawned",
    "session.resume_failed",
    "session.respawn_averted",
    "session.paused",
    "session.resumed",
    "session.closed",
    "session.autoclosed",
    "session.kept_open",
    "session.harness_terminated",
    "session.awaiting_input",
    "workspace.prepared",
    "workspace.removed",
    "poll.cycle",
    "poll.closure_detected",
    "poll.error",
    "poll.rate_limited",
    "standing.created",
    "standing.create_failed",
    "standing.deleted",
    "standing.started",
    "standing.resumed",
    "standing.resume_failed",
    "standing.spawn_failed",
    "standing.stopped",
    "standing.stop_failed",
    "standing.said",
    "slack.received",
    "slack.posted",
    "slack.dropped",
    "config.reloaded",
    "config.reload_failed",
    "config.warning",
    "daemon.started",
    "daemon.stopped",
]

EMITTER = """
import sys
from pathlib import Path
from the_loop import events as ev
from the_loop.store import open_database
db = open_database(Path(sys.argv[1]), sys.argv[4] or None)
tag = sys.argv[2]
for i in range(int(sys.argv[3])):
    ev.emit(db, "route.ignored", source=tag, reason=f"{tag}-{i}")
"""


def test_catalogue_holds_the_minimum_list() -> None:
    assert set(MINIMUM) <= set(ev.CATALOGUE)


def test_types_cli_prints_one_line_each(cli) -> None:
    result = cli("events", "--types")
    assert result.exit_code == 0
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(ev.CATALOGUE)
    assert any(line.startswith("session.autoclosed ") for line in lines)


def test_emit_validates_type_and_payload(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    with pytest.raises(ValueError, match="not in the catalogue"):
        ev.emit(db, "no.such", source="t")
    with pytest.raises(ValueError, match="bad payload"):
        ev.emit(db, "session.autoclosed", source="t", reason="because")
    ev.emit(db, "session.autoclosed", source="t", reason="pr-merged")


def test_two_processes_emitting_2000_each_lose_none(tmp_path: Path, db_url: str | None) -> None:
    open_database(tmp_path, db_url)
    procs = [
        subprocess.Popen([sys.executable, "-c", EMITTER, str(tmp_path), tag, "2000", db_url or ""])
        for tag in ("a", "b")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    db = open_database(tmp_path, db_url)
    rows = db.connect().execute("SELECT source, payload FROM events").fetchall()
    for tag in ("a", "b"):
        reasons = {json.loads(p)["reason"] for s, p in rows if s == tag}
        assert reasons == {f"{tag}-{i}" for i in range(2000)}


def test_query_filters(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    ev.emit(db, "session.spawned", source="t", work_item="github:o/r#1")
    ev.emit(db, "session.delivered", source="t", work_item="github:o/r#2")
    ev.emit(db, "standing.said", source="t", standing="probe")
    ev.emit(db, "poll.error", source="t", error="x")
    ev.emit(db, "dispatch.dead_lettered", source="t", error="y")

    def types(**kw: object) -> list[str]:
        return [e.type for e in ev.query(db, ev.EventFilter(**kw))]  # type: ignore[arg-type]

    assert types(types=("session.*",)) == ["session.spawned", "session.delivered"]
    assert types(types=("poll.*", "standing.*")) == ["standing.said", "poll.error"]
    assert types(work_item="github:o/r#2") == ["session.delivered"]
    assert types(standing="probe") == ["standing.said"]
    assert types(min_level=ev.Level.warning) == ["poll.error", "dispatch.dead_lettered"]
    assert types(limit=2) == ["poll.error", "dispatch.dead_lettered"]
    assert types(since=time.time() + 60) == []
    assert len(types(since=ev.parse_since("1h"))) == 5


def test_parse_since_forms() -> None:
    now = 1_000_000.0
    assert ev.parse_since("30s", now) == now - 30
    assert ev.parse_since("15m", now) == now - 900
    assert ev.parse_since("2h", now) == now - 7200
    assert ev.parse_since("1d", now) == now - 86400
    assert ev.parse_since("2026-01-01T00:00:00Z") == 1767225600.0
    from the_loop.errors import BadInput

    with pytest.raises(BadInput):
        ev.parse_since("yesterday")


def test_events_cli_formats_and_bad_input(cli, loop_env: Env) -> None:
    db = open_database(loop_env.state_dir, loop_env.database_url)
    ev.emit(db, "route.ignored", source="t", reason="x", work_item="github:o/r#3")
    table = cli("events")
    assert table.exit_code == 0 and "route.ignored" in table.stdout
    as_json = json.loads(cli("events", "--format", "json").stdout)
    assert as_json[0]["workItem"] == "github:o/r#3"
    jsonl = cli("events", "--format", "jsonl", "--work-item", "github:o/r#3").stdout
    assert json.loads(jsonl.splitlines()[0])["payload"] == {"reason": "x"}
    assert cli("events", "--since", "soon").exit_code == 2
    assert cli("events", "--level", "loud").exit_code == 2
    bad_ref = cli("events", "--work-item", "not a ref")
    assert bad_ref.exit_code == 2 and "github:OWNER/REPO#N" in bad_ref.stderr
    assert cli("events", "--standing", "Bad_Name").exit_code == 2


def test_follow_shows_an_event_emitted_by_another_process(loop_env: Env) -> None:
    open_database(loop_env.state_dir, loop_env.database_url)
    follower = loop_env.popen("events", "--follow", "--format", "jsonl", "--type", "standing.*")
    try:
        db = open_database(loop_env.state_dir, loop_env.database_url)
        # The follower starts after its own query: keep emitting until it shows one.
        lines: list[str] = []

        def seen() -> bool:
            ev.emit(db, "standing.said", source="other-process", standing="probe")
            assert follower.stdout is not None
            lines.append(follower.stdout.readline())
            return bool(lines[-1].strip())

        wait_until(seen, timeout=15)
        event = json.loads(lines[-1])
        assert event["type"] == "standing.said" and event["standing"] == "probe"
        start = time.monotonic()
        ev.emit(db, "standing.stopped", source="other-process", standing="probe")
        while True:
            line = follower.stdout.readline()  # type: ignore[union-attr]
            if json.loads(line)["type"] == "standing.stopped":
                break
        assert time.monotonic() - start < 1.0
    finally:
        follower.kill()
        follower.wait()


def test_prune_by_retention(tmp_path: Path, db_url: str | None) -> None:
    db = open_database(tmp_path, db_url)
    ev.emit(db, "poll.cycle", source="t")
    with db.transaction() as tx:
        tx.execute("UPDATE events SET ts = ts - 10 * 86400")
    ev.emit(db, "poll.cycle", source="t")
    assert ev.prune(db, retention_days=5) == 1
    assert len(ev.query(db, ev.EventFilter())) == 1
