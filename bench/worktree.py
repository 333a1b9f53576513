"""Worktrees of a large repository: how long a new session's worktree takes to be ready.

The repository is generated once (cached under ``<tmp>/the-loop-bench``) with ``git
fast-import``: about 100,000 small files in 1,000 directories, and a history of commits that
rewrite 100 incompressible 100 KB assets, until the pack holds about 1 GB. It is the clone of
``workspaces.repos``; every figure is ``work_items.workspace.prepare`` for a new work item (the
real code a spawn runs), timed from the call to its return, each worktree removed after
(untimed):

- **spare** (``workspaces.spare``, the default): the repository's spare worktree is ready, as
  it is when spawns are further apart than a spare takes to make; the spawn moves it and
  branches it. SPEC §13: a new session's worktree ready in ≤ 1 s p50.
- **cold** (``spare: false``): ``git worktree add`` checks out every file.
- **sparse, cold**: the same with ``workspaces.sparse`` listing 10 of the 1,000 directories.

It also times the spare's making (off the spawn's path) and the status disk figure's walk.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from common import Figure, Report, progress, wait_until

from the_loop.config import Config
from the_loop.refs import WorkItemRef
from the_loop.work_items import workspace

ASSETS = 100
ASSET_BYTES = 100 * 1024


def _stream(files: int, history_mb: int, out: subprocess.Popen[bytes]) -> int:
    """Write the fast-import stream into OUT's stdin; the number of commits."""
    pipe = out.stdin
    assert pipe is not None
    dirs = max(1, files // 100)
    when = 1_700_000_000

    def commit(n: int, message: str) -> None:
        data = message.encode()
        pipe.write(
            f"commit refs/heads/main\nmark :{n}\n"
            f"committer Bench <bench@example.com> {when + n} +0000\n"
            f"data {len(data)}\n".encode()
            + data
            + b"\n"
        )
        if n > 1:
            pipe.write(f"from :{n - 1}\n".encode())

    def inline(path: str, body: bytes) -> None:
        pipe.write(f"M 100644 inline {path}\ndata {len(body)}\n".encode() + body + b"\n")

    commit(1, "the tree")
    for i in range(files):
        d = i % dirs
        body = f"# file {i}\nvalue = {i * 7919 % 100003}\n".encode() * 4
        inline(f"d{d:04d}/f{i:06d}.py", body)
    written, n = 0, 1
    while written < history_mb << 20:
        n += 1
        commit(n, f"assets {n}")
        for a in range(0, ASSETS, 2):
            inline(f"assets/a{(a + n) % ASSETS:03d}.bin", os.urandom(ASSET_BYTES))
            written += ASSET_BYTES
    return n


def generate(files: int, history_mb: int) -> Path:
    """The cached generated repository (made when missing)."""
    base = Path(tempfile.gettempdir()) / "the-loop-bench" / f"repo-{files}-{history_mb}mb"
    if (base / ".generated").is_file():
        return base
    progress(f"generating {files} files, {history_mb} MB of history in {base} (once)")
    subprocess.run(["rm", "-rf", str(base)], check=True)
    subprocess.run(["git", "init", "-q", "-b", "main", str(base)], check=True)
    proc = subprocess.Popen(
        ["git", "fast-import", "--quiet", "--depth=0"], cwd=base, stdin=subprocess.PIPE
    )
    start = time.perf_counter()
    commits = _stream(files, history_mb, proc)
    assert proc.stdin is not None
    proc.stdin.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    (base / ".generated").write_text(f"{commits} commits\n")
    progress(f"generated {commits} commits in {time.perf_counter() - start:.0f} s")
    return base


def _pack_mb(repo: Path) -> float:
    packs = (repo / ".git" / "objects" / "pack").glob("*.pack")
    return sum(p.stat().st_size for p in packs) / 2**20


def _config(root: Path, clone: Path, **workspaces: object) -> Config:
    section = {"enabled": True, "repos": {"bench/big": str(clone)}, **workspaces}
    return Config.model_validate({"stateDir": str(root / "state"), "workspaces": section})


def _spare_ready(config: Config) -> bool:
    return (config.workspace_root / "_spare" / "github.com" / "bench" / "big.ready").is_file()


def _samples(config: Config, runs: int, first: int, spare: bool) -> tuple[list[float], float]:
    """RUNS timed prepares (ms) and the mean seconds a spare took to make (0 without)."""
    out: list[float] = []
    making: list[float] = []
    for n in range(first, first + runs):
        ref = WorkItemRef("bench", "big", n)
        start = time.perf_counter()
        ws = workspace.prepare(config, ref)
        done = time.perf_counter()
        out.append((done - start) * 1000)
        assert ws.created and ws.from_spare == spare, ws
        if spare:  # the next spare, made in a thread from the spawn's return
            wait_until(lambda: _spare_ready(config), timeout=600, what="the next spare")
            making.append(time.perf_counter() - done)
        workspace.remove(config, ref)
    return out, (sum(making) / len(making) if making else 0.0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--history-mb", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args()
    report = Report(
        "worktree",
        "Worktrees of a large repository",
        f"workspace.prepare for a new item on a generated repository ({args.files} files, "
        f"{args.history_mb} MB of history): a spare taken, cold, sparse cold",
    )
    clone = generate(args.files, args.history_mb)
    report.note(f"repository: {args.files} files, pack {_pack_mb(clone):.0f} MB at {clone}")
    with tempfile.TemporaryDirectory(prefix="bench-wt-") as tmp:
        root = Path(tmp)
        spare_cfg = _config(root / "a", clone)
        workspace.make_spare(spare_cfg, WorkItemRef("bench", "big", 1))  # as the daemon warms
        first = int(time.time()) % 10**6 * 1000  # new items: branches of earlier runs stay
        spare, making = _samples(spare_cfg, args.runs, first, True)
        start = time.perf_counter()
        disk = workspace.disk_usage(spare_cfg, wait=True)
        walk = time.perf_counter() - start
        cold, _ = _samples(
            _config(root / "b", clone, spare=False), args.cold_runs, first + 100, False
        )
        dirs = [f"d{d:04d}" for d in range(10)]
        sparse_cfg = _config(root / "c", clone, spare=False, sparse={"bench/big": dirs})
        sparse, _ = _samples(sparse_cfg, args.cold_runs, first + 200, False)
    s = report.distribution("worktree.spare", "new worktree, spare taken", spare)
    c = report.distribution("worktree.cold", "new worktree, cold (git worktree add)", cold)
    p = report.distribution("worktree.sparse", "new worktree, sparse (10 dirs), cold", sparse)
    report.figure(Figure("worktree.spare.p50", "new worktree ready, p50", s.p50, "ms", 1000))
    report.figure(Figure("worktree.spare.p95", "new worktree ready, p95", s.p95, "ms"))
    report.figure(Figure("worktree.cold.p50", "new worktree without a spare, p50", c.p50, "ms"))
    report.figure(Figure("worktree.sparse.p50", "sparse worktree, cold, p50", p.p50, "ms"))
    report.figure(Figure("worktree.spare.make", "a spare made (off the path)", making, "s"))
    report.figure(Figure("worktree.disk.walk", "status disk figure: one walk", walk, "s"))
    if disk is not None:
        report.note(f"disk figure: {disk.bytes / 2**20:.0f} MiB in {disk.spares} spare(s)")
    report.finish()


if __name__ == "__main__":
    main()
