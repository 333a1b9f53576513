"""Which config file the daemon runs on (issue 28): `status` (both paths), the Status page
and the start-up banner name it; a CLI reading another file is told, and so is `init`."""

from __future__ import annotations

import json
import shutil

import httpx

from tests.daemon import Daemon
from tests.work import Work


def test_status_page_and_banner_name_the_daemons_config(work: Work) -> None:
    d = Daemon(work)
    d.start()
    try:
        path = str(work.env.config_path.absolute())
        for _ in range(2):  # the full CLI stores the facts; the second run may take the fast path
            shown = work.env.run("status")
            assert shown.exit_code == 0, shown.stdout + shown.stderr
            assert f"  config:    {path}\n" in shown.stdout, shown.stdout
            assert "warning" not in shown.stdout
        report = json.loads(work.env.run("status", "--format", "json").stdout)
        assert report["configPath"] == path
        assert f"  config:    {path}" in d.log()
        client = httpx.Client(base_url=d.url, timeout=30)
        assert client.post("/login", json={"token": d.token}).status_code == 200
        assert f"<code>{path}</code>" in client.get("/status").text

        other = work.env.root / "other.yaml"
        shutil.copy(work.env.config_path, other)
        elsewhere = work.env.run("--config", str(other), "status")
        assert f"this command reads {other.absolute()}, but the daemon runs on {path}" in (
            elsewhere.stdout
        ), elsewhere.stdout
        assert "the-loop stop && the-loop start" in elsewhere.stdout

        fresh = work.env.root / "fresh.yaml"
        made = work.env.run("init", str(fresh))
        assert made.exit_code == 0, made.stderr
        assert f"the running daemon (pid {d.proc.pid if d.proc else 0}) uses {path}" in (
            made.stdout
        ), made.stdout
        assert f"the-loop --config {fresh} start" in made.stdout
    finally:
        d.stop()
