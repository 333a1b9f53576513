"""The `daemon` fixture: a running daemon with GitHub webhooks and the fake agent."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.helpers import wait_until
from tests.work import Work
from the_loop.daemon.serve import read_info
from the_loop.github.signature import sign

SECRET = "webhook-secret-for-tests"


@dataclass
class Daemon:
    work: Work
    proc: subprocess.Popen[str] | None = None
    url: str = ""
    token: str = ""

    @property
    def log_path(self) -> Path:
        """Where the daemon's stdout and stderr go (every start of this daemon appends)."""
        return self.work.env.root / "daemon.log"

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8") if self.log_path.exists() else ""

    def start(self, **extra_env: str) -> None:
        env = self.work.env.process_env()
        env["THE_LOOP_WEBHOOK_SECRET"] = SECRET
        env.update(extra_env)
        with self.log_path.open("a", encoding="utf-8") as output:
            self.proc = self.work.env.popen("serve", env=env, output=output)
        proc = self.proc

        def mine() -> object:
            info = read_info(self.work.env.state_dir)
            return info if info is not None and info.pid == proc.pid else None

        info = wait_until(mine, timeout=60, what="daemon info")  # type: ignore[assignment]
        self.url = info.url
        self.token = (self.work.env.state_dir / "api-token").read_text().strip()
        seen: list[str] = []
        try:
            wait_until(lambda: _healthy(self.url, self.token, seen), timeout=60, what="health")
        except AssertionError as exc:
            answers = "; ".join(seen[-5:])
            stacks = _stacks(proc, self.log_path)
            raise AssertionError(
                f"{exc} (last answers: {answers}); the daemon's output:\n{self.log()[-4000:]}"
                f"\nits threads:\n{stacks}"
            ) from None

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)
        self.proc = None

    def post(
        self,
        event: str,
        payload: Any,
        delivery: str,
        *,
        secret: str | None = SECRET,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        raw = body if body is not None else json.dumps(payload).encode()
        sent = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery,
            "Content-Type": "application/json",
            **(headers or {}),
        }
        if secret is not None:
            sent["X-Hub-Signature-256"] = sign(secret.encode(), raw)
        return httpx.post(f"{self.url}/webhooks/github", content=raw, headers=sent, timeout=30)

    def api(self, method: str, path: str, token: str | None = "", **kw: Any) -> httpx.Response:
        """Call ``/api/v1`` + PATH; TOKEN "" means the generated full token, None none."""
        headers = dict(kw.pop("headers", {}))
        chosen = self.token if token == "" else token
        if chosen is not None:
            headers["Authorization"] = f"Bearer {chosen}"
        return httpx.request(method, f"{self.url}/api/v1{path}", headers=headers, timeout=30, **kw)

    def metrics(self) -> str:
        """The ``/metrics`` text, read with the full token."""
        got = httpx.get(
            f"{self.url}/metrics", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )
        assert got.status_code == 200, got.text
        return got.text

    def metric(self, name: str) -> float | None:
        """The value of metric NAME, labels included as ``/metrics`` prints them
        (``the_loop_task_passes_total{task="spend"}``); None when it is not there."""
        found = [
            float(value)
            for head, _, value in (line.rpartition(" ") for line in self.metrics().splitlines())
            if head == name
        ]
        assert len(found) <= 1, f"{name} is printed {len(found)} times"
        return found[0] if found else None


def _stacks(proc: subprocess.Popen[str], log_path: Path) -> str:
    """Ask a daemon that does not answer for its threads' stacks (SIGUSR1, see ``serve``)."""
    before = log_path.stat().st_size if log_path.exists() else 0
    if proc.poll() is not None:
        return f"(the daemon exited with {proc.returncode})"
    proc.send_signal(signal.SIGUSR1)

    def dumped() -> bool:
        text = log_path.read_text(encoding="utf-8", errors="replace")[before:]
        return "Current thread" in text or "most recent call first" in text

    try:
        wait_until(dumped, timeout=10, what="the stack dump")
    except AssertionError:
        return "(no stack dump within 10 s)"
    return log_path.read_text(encoding="utf-8", errors="replace")[before:][-12000:]


def _healthy(url: str, token: str, seen: list[str] | None = None) -> bool:
    """Whether the daemon at URL answers its health with 200; what it answered goes to SEEN."""
    try:
        headers = {"Authorization": f"Bearer {token}"}
        resp = httpx.get(f"{url}/api/v1/health", timeout=2, headers=headers)
        answer = f"HTTP {resp.status_code}"
    except httpx.HTTPError as exc:
        resp, answer = None, f"{type(exc).__name__}: {exc}"
    if seen is not None:
        seen.append(answer)
    return resp is not None and resp.status_code == 200


@contextmanager
def served(work: Work, **extra_env: str) -> Iterator[Daemon]:
    """A daemon on WORK's config, started (with EXTRA_ENV) and stopped after."""
    d = Daemon(work)
    d.start(**extra_env)
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def daemon(work: Work) -> Iterator[Daemon]:
    work.configure(github={"enabled": True})
    d = Daemon(work)
    d.start()
    yield d
    d.stop()
