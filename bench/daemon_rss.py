"""Daemon memory when idle: ``VmRSS`` of a real ``the-loop serve`` (``/proc/<pid>/status``).

Two configurations, each given a few seconds to settle after it reports healthy:

1. the embedded defaults (GitHub off): HTTP app, REST API, MCP endpoint, inbox worker,
   reconciler, config reload, event pruning;
2. everything in one process: GitHub webhooks, the poller against a fake GitHub on loopback
   (one repository, 50 labelled items, a cycle every second), write-backs configured.

The RSS is sampled every 100 ms over the settling time; the figure is the largest sample.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

import common
from common import Daemon, Figure, Install, Report

NAME = "daemon_rss"


def settle(daemon: Daemon, seconds: float) -> list[float]:
    samples: list[float] = []
    deadline = time.monotonic() + seconds
    pause = threading.Event()
    while time.monotonic() < deadline:
        samples.append(daemon.rss_mb())
        pause.wait(0.1)  # the sampling period
    return samples


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()

    report = Report(NAME, "Daemon RSS when idle", __doc__ or "")
    with Install(f"{NAME}-defaults") as install:
        daemon = Daemon(install).start()
        samples = settle(daemon, args.seconds)
        report.distribution("defaults", "RSS, embedded defaults (MB)", samples, "MB")
        report.figure(
            Figure("rss.idle.defaults", "daemon RSS idle, defaults", max(samples), "MB", 100)
        )

    gh = common.fake_github().start()
    try:
        with Install(f"{NAME}-all") as install:
            gh.create_repo("octo/repo")
            for n in range(50):
                gh.add_issue("octo/repo", f"Item {n}", "Body.", labels=["the-loop"])
            install.extra_env["FAKE_GH_TOKEN"] = gh.token
            os.environ["FAKE_GH_TOKEN"] = gh.token
            install.write_config(
                github={
                    "enabled": True,
                    "apiUrl": gh.api_url,
                    "tokenEnv": "FAKE_GH_TOKEN",
                    "repos": ["octo/repo"],
                    "poller": {"enabled": True, "intervalSeconds": 1},
                }
            )
            daemon = Daemon(install).start()
            common.wait_until(
                lambda: gh.count(status=304) >= 1, timeout=30, what="an idle poll cycle"
            )
            samples = settle(daemon, args.seconds)
            report.distribution("all", "RSS, webhooks + poller + API + MCP (MB)", samples, "MB")
            report.figure(
                Figure("rss.idle.all", "daemon RSS idle, everything on", max(samples), "MB", 100)
            )
    finally:
        gh.stop()
    report.finish()


if __name__ == "__main__":
    main()
