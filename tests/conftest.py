"""Fixtures shared by the whole suite: an isolated state dir and config, and CLI runners."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
BACKENDS = ["sqlite", "postgresql"]


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@dataclass
class Env:
    """One isolated installation: its state dir, config file and tmux socket."""

    root: Path
    state_dir: Path
    config_path: Path
    socket: str
    database_url: str | None = None
    """The PostgreSQL database of this installation (None: the SQLite file)."""

    def write_config(self, **sections: object) -> Path:
        """Write the config file: isolated defaults merged with SECTIONS (camelCase keys)."""
        data: dict[str, object] = {
            "stateDir": str(self.state_dir),
            "server": {"port": 0},
            "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 2},
            # the fake agent keeps its records outside its tree: the suite runs agents
            # unconfined; tests/security/test_sandbox*.py run them confined
            "sandbox": {"mode": "none"},
        }
        if self.database_url is not None:
            data["database"] = {"url": self.database_url}
        for key, value in sections.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}  # type: ignore[dict-item]
            else:
                data[key] = value
        self.config_path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return self.config_path

    def process_env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THE_LOOP_")}
        env.pop("TMUX", None)
        env["THE_LOOP_CONFIG"] = str(self.config_path)
        env["HOME"] = str(self.root / "home")
        return env

    def run(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        input: str | None = None,
    ) -> CliResult:
        """Run the real ``the-loop`` CLI in a subprocess against this installation."""
        proc = subprocess.run(
            [sys.executable, "-m", "the_loop", *args],
            capture_output=True,
            text=True,
            env=env or self.process_env(),
            timeout=timeout,
            input=input,
            cwd=self.root,
        )
        return CliResult(proc.returncode, proc.stdout, proc.stderr)

    def popen(
        self, *args: str, env: dict[str, str] | None = None, output: IO[str] | None = None
    ) -> subprocess.Popen[str]:
        """Start the real CLI; its stdout and stderr are pipes, or both go to OUTPUT (a file:
        a long-running process whose pipes nobody reads would block once they fill)."""
        return subprocess.Popen(
            [sys.executable, "-m", "the_loop", *args],
            stdout=subprocess.PIPE if output is None else output,
            stderr=subprocess.PIPE if output is None else subprocess.STDOUT,
            text=True,
            env=env or self.process_env(),
            cwd=self.root,
        )


@pytest.fixture
def state_backend() -> str:
    """Where the state of a test's installation lives: ``sqlite`` here; a module or folder
    whose tests also run against PostgreSQL overrides it with a fixture of the same name
    parametrized over ``BACKENDS``."""
    return "sqlite"


@pytest.fixture
def db_url(state_backend: str, request: pytest.FixtureRequest) -> str | None:
    """``database.url`` for this test: None (SQLite), or a fresh PostgreSQL database."""
    if state_backend == "sqlite":
        return None
    url: str = request.getfixturevalue("pg_url")
    return url


def new_env(root: Path, db_url: str | None) -> Env:
    """An installation under ROOT (its home, state dir, config and own tmux socket) with a
    written default config; the caller kills its tmux server when done."""
    (root / "home").mkdir(parents=True)
    env = Env(
        root=root,
        state_dir=root / "state",
        config_path=root / "the-loop.yaml",
        socket=f"the-loop-test-{uuid.uuid4().hex[:10]}",
        database_url=db_url,
    )
    env.write_config()
    return env


@pytest.fixture
def loop_env(tmp_path: Path, db_url: str | None) -> Iterator[Env]:
    """An isolated the-loop installation with a written default config."""
    env = new_env(tmp_path, db_url)
    yield env
    subprocess.run(["tmux", "-L", env.socket, "kill-server"], capture_output=True, check=False)
    from the_loop.daemon.serve import read_info

    info = read_info(env.state_dir)
    if info is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(info.pid, 9)


@pytest.fixture
def cli(loop_env: Env, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    """Run the CLI in this process (fast): returns a function ARGS -> CliResult."""
    from the_loop.cli import common
    from the_loop.cli.main import _dispatch

    monkeypatch.setenv("THE_LOOP_CONFIG", str(loop_env.config_path))

    def run(*args: str) -> CliResult:
        common.STATE.__init__()  # type: ignore[misc]
        capsys.readouterr()
        code = _dispatch(list(args))
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return run


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``claude`` is skipped when the pinned Claude Code CLI is missing, one
    marked ``bwrap`` where bubblewrap cannot make a sandbox (asked once per run, when the
    first such test starts); each with the reason."""
    if item.get_closest_marker("claude") is not None:
        from tests.harness.agent_clis import CLAUDE_BIN

        if not CLAUDE_BIN.exists():
            pytest.skip(f"no Claude Code CLI at {CLAUDE_BIN} (make setup)")
    if item.get_closest_marker("bwrap") is not None:
        from the_loop.runner.sandbox import bwrap_works

        works, why = bwrap_works()
        if not works:
            pytest.skip(why)


from tests.daemon import daemon  # noqa: E402,F401
from tests.pg import pg_server, pg_url  # noqa: E402,F401  (PostgreSQL for the store tests)
from tests.work import work  # noqa: E402,F401  (the fixture, shared by several test folders)


@pytest.fixture(autouse=True)
def _no_hook_left_waiting() -> Iterator[None]:
    """A permission hook a test started and left waiting (the test failed before its answer)
    retries its connection for as long as it runs: it is ended with its test."""
    yield
    from tests.attention.hooks import end_started_hooks  # lazy: it imports this module

    end_started_hooks()
