"""The remaining notes of issue 29 (item 6), over real HTTP and the real CLI: the login page
carries the security headers every other page carries; ``x/.git``-style repository names are
refused by the one repository grammar (CLI exit 2 with ``error: …``, API 400); a WAL index
(the SQLite ``-shm`` file) that cannot be written is one clear line, never a crash, and the
daemon's health fails while it lasts."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.errors import BadInput
from the_loop.refs import WorkItemRef, validate_owner_repo
from the_loop.web.page_headers import PAGE_HEADERS

pytestmark = pytest.mark.security

REFUSED = ["x/.git", "x/a.git", "x/A.GIT", "x/.", "x/.."]


def test_the_login_page_carries_every_page_header(daemon: Daemon) -> None:
    form = httpx.get(f"{daemon.url}/login", timeout=10)
    assert form.status_code == 200
    failed = httpx.post(f"{daemon.url}/login", data={"token": "wrong"}, timeout=10)
    assert failed.status_code == 401
    with httpx.Client(base_url=daemon.url, timeout=10) as client:
        assert client.post("/login", data={"token": daemon.token}).status_code in (200, 303)
        page = client.get("/")
    assert page.status_code == 200
    for name, value in PAGE_HEADERS.items():
        assert page.headers.get(name) == value, name  # what the other pages send
        assert form.headers.get(name) == value, name
        assert failed.headers.get(name) == value, name


@pytest.mark.parametrize("name", REFUSED)
def test_the_repository_grammar_refuses_git_suffixes_and_dots(name: str) -> None:
    with pytest.raises(BadInput, match=r"not ending in '\.git'"):
        validate_owner_repo(name)
    with pytest.raises(BadInput):
        WorkItemRef.parse(f"github:{name}#1")
    assert validate_owner_repo("x/a.gitx") == ("x", "a.gitx")
    assert validate_owner_repo("x/.github") == ("x", ".github")


def test_an_x_dot_git_ref_is_refused_by_the_cli_and_the_api(daemon: Daemon) -> None:
    work = daemon.work
    for ref in ("github:x/.git#1", "github:octo/repo.git#2"):
        cli = work.cli("sessions", "start", ref, "--prompt", "hello")
        assert cli.exit_code == 2, cli.stdout + cli.stderr
        assert cli.stderr.startswith("error: ") and "Traceback" not in cli.stderr
        api = daemon.api("POST", "/sessions", json={"ref": ref, "prompt": "hello"})
        assert api.status_code == 400, api.text
    assert work.cli("sessions", "list").exit_code == 0
    assert "repo.git" not in work.cli("sessions", "list").stdout


@pytest.fixture
def read_only_wal_index(work: Work) -> Iterator[Path]:
    """A daemon's WAL index made read-only under it (a read-only bind mount of the file on
    itself: the daemon's open connections keep their mapping, a new open gets EROFS), as when
    its owner or mode is changed behind the daemon's back."""
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root")
    shm = work.env.state_dir / "the-loop.db-shm"
    yield shm
    subprocess.run(["umount", str(shm)], check=False, capture_output=True)


def _read_only(shm: Path) -> None:
    subprocess.run(["mount", "--bind", str(shm), str(shm)], check=True)
    subprocess.run(["mount", "-o", "remount,bind,ro", str(shm)], check=True)


def test_an_unwritable_wal_index_is_one_clear_line_and_health_fails(
    work: Work, read_only_wal_index: Path
) -> None:
    work.configure(github={"enabled": True})
    d = Daemon(work)
    d.start()
    try:
        shm = read_only_wal_index
        assert shm.exists()
        _read_only(shm)

        def failing() -> list[str]:
            health = d.api("GET", "/health").json()
            found = health["problems"] if health["status"] == "unhealthy" else []
            return [p for p in found if "WAL index" in p]

        problems = wait_until(failing, 30, what="health failing on the WAL index")
        assert str(shm) in problems[0] and "cannot be written" in problems[0]
        assert d.proc is not None and d.proc.poll() is None, "the daemon keeps serving"
        status = work.env.run("status")
        assert status.exit_code != 0 and "WAL index" in status.stdout + status.stderr

    finally:
        d.stop()
    payload = work.env.root / "payload.json"
    payload.write_text(json.dumps(P.issue_comment_event("the-loop start")))
    cli = work.env.run("dispatch", "--event", "issue_comment", str(payload))
    assert cli.exit_code == 1, (cli.exit_code, cli.stderr)  # a new connection: not a crash
    lines = cli.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), cli.stderr
    assert "WAL index" in lines[0] and "Traceback" not in cli.stderr
    served = work.env.run("serve", timeout=60)
    assert served.exit_code == 1
    lines = served.stderr.strip().splitlines()
    assert len(lines) == 1 and "WAL index" in lines[0] and "cannot be written" in lines[0]
