"""A full disk or a read-only state dir: a clear error, nothing half-written (SPEC §12).

Both use a real small tmpfs mounted on the state dir (needs root, as CI and the developer
machines have; skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.fakes import payloads as P

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root"),
]


@pytest.fixture
def small_state(loop_env: Env) -> Iterator[Path]:
    loop_env.state_dir.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1280k", "tmpfs", str(loop_env.state_dir)], check=True
    )
    try:
        yield loop_env.state_dir
    finally:
        subprocess.run(["umount", "-l", str(loop_env.state_dir)], check=False)


def _integrity(state: Path, read_only_fs: bool = False) -> str:
    # On a read-only filesystem SQLite cannot make the WAL index: read the file as immutable
    # (the last writer checkpointed it when it closed).
    flags = "mode=ro&immutable=1" if read_only_fs else "mode=ro"
    conn = sqlite3.connect(f"file:{state / 'the-loop.db'}?{flags}", uri=True)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def test_full_disk_is_a_clear_error_and_the_database_stays_whole(
    loop_env: Env, small_state: Path
) -> None:
    payload = loop_env.root / "payload.json"
    big = "x" * 20_000
    payload.write_text(json.dumps(P.issue_comment_event(f"the-loop start {big}")))
    results = []
    for n in range(80):
        result = loop_env.run(
            "dispatch", "--event", "issue_comment", "--delivery", f"d{n}", str(payload)
        )
        results.append(result)
        if result.exit_code != 0:
            break
    failed = results[-1]
    assert failed.exit_code == 1, "the disk never filled up"
    assert failed.stderr.startswith("error: "), failed.stderr
    assert "full" in failed.stderr and "Traceback" not in failed.stderr
    assert _integrity(small_state) == "ok"
    listing = loop_env.run("inbox", "list", "--format", "json", "--limit", "1000")
    assert listing.exit_code == 0
    stored = {i["deliveryId"] for i in json.loads(listing.stdout)}
    assert {f"d{n}" for n in range(len(results) - 1)} <= stored


def test_read_only_state_dir_is_a_clear_error(loop_env: Env, small_state: Path) -> None:
    assert loop_env.run("events").exit_code == 0
    subprocess.run(["mount", "-o", "remount,ro", str(small_state)], check=True)
    payload = loop_env.root / "payload.json"
    payload.write_text(json.dumps(P.issue_comment_event("the-loop start")))
    result = loop_env.run("dispatch", "--event", "issue_comment", str(payload))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert "not writable" in result.stderr
    served = loop_env.run("serve")
    assert served.exit_code == 1 and "Traceback" not in served.stderr
    assert _integrity(small_state, read_only_fs=True) == "ok"
