"""Worktrees by age and by size (issue 31): a closed session's worktree goes once it is
``workspaces.keepDays`` old (never one whose item has a live session), through the one pruning
core; the disk the worktrees use is in status (JSON and text) and on the Status page."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from tests.workspaces.test_worktrees import make_repo
from the_loop.cli import common
from the_loop.context import Ctx
from the_loop.daemon import housekeeping
from the_loop.work_items.prune import prune_worktrees

DAY = 86400.0


def started(work: Work, *numbers: int) -> Path:
    for number in numbers:
        r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start", number=number))
        assert "spawned" in r.stdout, r.stdout + r.stderr
    return work.env.state_dir / "workspaces"


def loaded_ctx() -> Ctx:
    common.STATE.__init__()  # type: ignore[misc]  # read the config file as it is now
    return common.ctx()


def test_closed_worktrees_go_after_keep_days_never_a_live_ones(work: Work) -> None:
    clone = make_repo(work.env.root / "clone")
    section: dict[str, Any] = {"enabled": True, "repos": {"octo/repo": str(clone)}, "spare": False}
    work.configure(workspaces={**section, "keepDays": 1})
    root = started(work, 1, 2, 3)
    assert work.env.run("sessions", "close", "octo/repo#1").exit_code == 0
    assert work.env.run("sessions", "close", "octo/repo#3").exit_code == 0
    started(work, 3)  # item 3 has a live session again, after an old closed one
    ctx = loaded_ctx()

    assert prune_worktrees(ctx) is not None
    assert all((root / f"github-octo-repo-{n}").is_dir() for n in (1, 2, 3))  # not a day old

    later = prune_worktrees(ctx, now=time.time() + 2 * DAY)
    assert later is not None and later.worktrees == ["github:octo/repo#1"]
    assert not (root / "github-octo-repo-1").exists()
    assert (root / "github-octo-repo-2").is_dir() and (root / "github-octo-repo-3").is_dir()

    assert work.env.run("sessions", "close", "octo/repo#2").exit_code == 0
    work.configure(workspaces=section)  # no keepDays: the daemon's hourly pass keeps them
    housekeeping.prune(loaded_ctx())
    assert (root / "github-octo-repo-2").is_dir()
    work.configure(workspaces={**section, "keepDays": 0})
    housekeeping.prune(loaded_ctx())  # the daemon's hourly pass, at once
    assert not (root / "github-octo-repo-2").exists()
    assert (root / "github-octo-repo-3").is_dir()  # live: kept
    done = [e for e in work.events("prune.done") if "github:octo/repo#2" in json.dumps(e)]
    assert done, work.events("prune.done")


def test_the_disk_used_by_worktrees_is_in_status_and_on_the_status_page(work: Work) -> None:
    clone = make_repo(work.env.root / "clone")
    work.configure(workspaces={"enabled": True, "repos": {"octo/repo": str(clone)}})
    root = started(work, 1)
    spare = root / "_spare" / "github.com" / "octo" / "repo.ready"
    wait_until(spare.is_file, what="the spare made after the spawn")
    (root / "github-octo-repo-1" / "big.bin").write_bytes(b"x" * (3 << 20))
    d = Daemon(work)
    d.start()
    try:

        def measured() -> dict[str, Any] | None:
            shown = work.env.run("status", "--format", "json")
            disk: dict[str, Any] | None = json.loads(shown.stdout).get("worktrees")
            return disk

        disk = wait_until(measured, what="a disk figure in status")
        assert disk["worktrees"] == 1 and disk["spares"] == 1, disk
        assert 3 << 20 <= disk["bytes"] < 40 << 20, disk
        text = work.env.run("status").stdout
        assert "  worktrees: 1 uses " in text and "(1 ready spare included)" in text, text
        client = httpx.Client(base_url=d.url, timeout=30)
        assert client.post("/login", json={"token": d.token}).status_code == 200
        page = client.get("/status").text
        assert "1 worktree uses <strong>" in page and "MiB</strong>" in page, page
    finally:
        d.stop()
