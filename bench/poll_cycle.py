"""Poll cycle cost: requests, rate-limited (cost) requests and time per idle cycle.

``the_loop.intake.github_poller.Poller`` runs in this process against the fake GitHub (real HTTP on
loopback, strong ETags, ``X-RateLimit-*``, 304s that cost nothing), for 1, 10 and 50
repositories with 50 open labelled items each (40 issues, 10 pull requests, two comments
each, no start keyword). The first cycle reads everything (first sight, the baseline); after
a settling cycle, the request log is reset and idle cycles are measured: nothing changed on
GitHub, so every request should be a conditional one answered 304.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import common
from common import Figure, Install, Report

from tests.fakes.fake_github import FakeGitHub

NAME = "poll_cycle"
ITEMS = 50
PULLS = 10


def populate(gh: FakeGitHub, repos: list[str]) -> None:
    for repo in repos:
        gh.create_repo(repo)
        for n in range(ITEMS):
            if n < ITEMS - PULLS:
                number = gh.add_issue(repo, f"Issue {n}", "Something is off.", labels=["the-loop"])
            else:
                number = gh.add_pull(
                    repo,
                    f"Pull {n}",
                    "Fixes a thing.",
                    labels=["the-loop"],
                    head_ref=f"feature-{n}",
                )
            gh.add_comment(repo, number, "I can reproduce this.", author="bob")
            gh.add_comment(repo, number, "Same here, on main.", author="carol")


async def cycles(gh: FakeGitHub, install: Install, idle: int) -> dict[str, object]:
    from the_loop.context import open_ctx
    from the_loop.intake.github_poller import Poller

    ctx = open_ctx(install.config_path)
    poller = Poller(ctx)
    try:
        gh.reset_log()
        first = await poller.cycle()
        first_requests, first_cost = len(gh.requests()), gh.cost()
        await poller.cycle()  # settles anything the first one changed
        gh.reset_log()
        seconds: list[float] = []
        per_cycle: list[int] = []
        for _ in range(idle):
            before = len(gh.requests())
            t0 = time.perf_counter()
            result = await poller.cycle()
            seconds.append((time.perf_counter() - t0) * 1000)
            per_cycle.append(len(gh.requests()) - before)
            if not result.ok:
                raise RuntimeError(f"an idle cycle failed: {[r.error for r in result.repos]}")
        log = gh.requests()
        return {
            "first_requests": first_requests,
            "first_cost": first_cost,
            "first_ok": first.ok,
            "requests": len(log),
            "not_modified": sum(1 for r in log if r.status == 304),
            "cost": gh.cost(),
            "per_cycle": per_cycle,
            "seconds": seconds,
        }
    finally:
        await poller.client.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--idle", type=int, default=5, help="idle cycles measured per size")
    args = parser.parse_args()

    report = Report(NAME, "Poll cycle cost", __doc__ or "")
    bars: list[tuple[str, float, float | None, float | None]] = []
    for count in args.repos:
        with Install(f"{NAME}-{count}") as install, common.fake_github() as gh:
            repos = [f"octo/repo{i}" for i in range(count)]
            with common.step(f"{count} repositories \u00d7 {ITEMS} items on the fake GitHub"):
                populate(gh, repos)
            os.environ["FAKE_GH_TOKEN"] = gh.token
            install.write_config(
                github={
                    "enabled": True,
                    "apiUrl": gh.api_url,
                    "tokenEnv": "FAKE_GH_TOKEN",
                    "repos": repos,
                }
            )
            with common.step(f"first sight + settle + {args.idle} idle cycles ({count} repos)"):
                found = asyncio.run(cycles(gh, install, args.idle))
            cycles_run = args.idle
            per_repo = found["requests"] / cycles_run / count  # type: ignore[operator]
            cost = found["cost"] / cycles_run  # type: ignore[operator]
            share = found["not_modified"] / max(found["requests"], 1)  # type: ignore[call-overload,operator]
            print(
                f"{count} repos: first cycle {found['first_requests']} requests "
                f"({found['first_cost']} cost); idle: {per_repo:g} requests per repository per "
                f"cycle, {share:.0%} answered 304, {cost:g} cost per cycle",
                flush=True,
            )
            report.distribution(
                f"seconds_{count}", f"idle cycle time, {count} repositories", found["seconds"]
            )  # type: ignore[arg-type]
            earlier = 52.0 if count == 1 else None
            report.figure(
                Figure(
                    f"poll.requests.{count}",
                    f"idle cycle, {count} repos: requests per repository",
                    per_repo,
                    "requests",
                    2,
                    earlier=earlier,
                    earlier_text="52 full-cost calls" if earlier else "",
                )
            )
            report.figure(
                Figure(
                    f"poll.cost.{count}",
                    f"idle cycle, {count} repos: rate-limited requests",
                    cost,
                    "requests",
                    0,
                    earlier=earlier,
                )
            )
            report.figure(
                Figure(
                    f"poll.304.{count}",
                    f"idle cycle, {count} repos: share answered 304",
                    share * 100,
                    "%",
                    100,
                    better="higher",
                )
            )
            report.note(
                f"{count} repositories: first sight {found['first_requests']} requests, "
                f"{found['first_cost']} of them rate-limited"
            )
            bars.append(
                (f"{count} repo{'s' if count > 1 else ''} (per repo)", per_repo, 2.0, earlier)
            )
    path = common.PLOTS / f"{NAME}-requests.svg"
    common.svg_bars(
        path, "Requests per repository in an idle poll cycle (all 304)", bars, "requests"
    )
    report.plot(path)
    report.finish()


if __name__ == "__main__":
    main()
