"""The default harnesses find the agent CLIs `make setup` pins in the project's
node_modules/.bin when they are not on PATH, and `doctor` says where each one was found."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.fakes import payloads as P
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.harness.agent_clis import CLAUDE_BIN, REPO
from tests.helpers import wait_until
from tests.work import Work
from the_loop.harness import LaunchSpec, build_adapter, locate, with_located_binary
from the_loop.harness.binaries import project_node_bin

NODE_BIN = REPO / "node_modules" / ".bin"
needs_node_modules = pytest.mark.skipif(
    not CLAUDE_BIN.exists(), reason=f"no pinned agent CLIs in {NODE_BIN} (run `make setup`)"
)


def bare_path(root: Path) -> str:
    """A PATH with the tools the-loop itself needs (tmux, git, a shell) and no agent CLI."""
    bin_dir = root / "bare-bin"
    bin_dir.mkdir(exist_ok=True)
    for tool in ("tmux", "git", "sh", "env"):
        found = shutil.which(tool)
        if found and not (bin_dir / tool).exists():
            (bin_dir / tool).symlink_to(found)
    return str(bin_dir)


def executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o755)
    return path


@needs_node_modules
def test_path_first_then_the_project_node_modules(tmp_path: Path) -> None:
    assert project_node_bin() == NODE_BIN
    bare = {"PATH": bare_path(tmp_path)}
    found = locate("claude", bare)
    assert found is not None and found.where == "node_modules"
    assert found.path == str(NODE_BIN / "claude")
    own = executable(tmp_path / "own-bin" / "claude")
    on_path = locate("claude", {"PATH": f"{own.parent}:{bare['PATH']}"})
    assert on_path is not None and (on_path.path, on_path.where) == (str(own), "PATH")
    assert locate("no-such-agent-cli", bare) is None
    assert locate(str(tmp_path / "missing" / "claude"), bare) is None
    configured = locate(str(own), bare)
    assert configured is not None and configured.where == "configured"

    adapter = build_adapter("claude")
    launch = adapter.interactive(LaunchSpec(tmp_path, "00000000-0000-0000-0000-000000000001"))
    assert launch.argv[0] == "claude"
    moved = with_located_binary(replace(launch, env=bare))
    assert moved.argv == (str(NODE_BIN / "claude"), *launch.argv[1:])
    own_path = {"PATH": f"{own.parent}:{bare['PATH']}"}
    assert with_located_binary(replace(launch, env=own_path)).argv == launch.argv


@needs_node_modules
def test_doctor_says_where_each_harness_binary_was_found(loop_env: Env) -> None:
    own = executable(loop_env.root / "own-bin" / "gemini")
    loop_env.write_config(
        harnesses={
            "codex": {},
            "gemini": {"env": {"PATH": f"{own.parent}:{bare_path(loop_env.root)}"}},
            "ghost": {"adapter": "command", "interactive": ["ghost-agent-cli"]},
        }
    )
    env = {**loop_env.process_env(), "PATH": bare_path(loop_env.root)}
    result = loop_env.run("doctor", "--format", "json", env=env)
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    for name in ("claude", "codex"):
        check = checks[f"harness {name}"]
        assert check["status"] == "ok", check
        assert check["detail"] == (
            f"{NODE_BIN / name} (the project's node_modules/.bin, not on PATH)"
        )
    assert checks["harness gemini"]["detail"] == f"{own} (on PATH)"
    ghost = checks["harness ghost"]
    assert ghost["status"] == "missing" and ghost["required"] is False
    assert (
        ghost["detail"] == "ghost-agent-cli not found on PATH or in the project's node_modules/.bin"
    )
    assert result.exit_code == 0, result.stdout


@pytest.fixture
def api() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as fake:
        yield fake


@needs_node_modules
@pytest.mark.claude
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_the_default_claude_harness_runs_the_pinned_cli_first_time(
    work: Work, api: FakeAnthropic
) -> None:
    env = {**api.claude_env(work.env.root / "claude-config"), "HOME": str(work.env.root / "home")}
    work.env.write_config(  # no `binary`: the default harness, exactly as a newcomer has it
        harnesses={"claude": {"env": env}},
        routing={"defaultHarness": "claude", "authorizedUsers": ["alice"]},
    )
    cli_env = {**work.env.process_env(), "PATH": bare_path(work.env.root)}
    path = work.env.root / "payload.json"
    path.write_text(json.dumps(P.issue_comment_event("the-loop do count the stars")))
    result = work.env.run("dispatch", "--event", "issue_comment", str(path), env=cli_env)
    assert result.exit_code == 0 and "spawned" in result.stdout, result.stdout + result.stderr
    wait_until(
        lambda: any("count the stars" in (r.prompt or "") for r in api.conversation_requests()),
        90,
        what="the spawn prompt at the fake Anthropic API",
    )
    pid = work.tmux("list-panes", "-t", "=loop-github-octo-repo-15:", "-F", "#{pane_pid}")
    argv0 = Path(f"/proc/{int(pid.stdout.split()[0])}/cmdline").read_bytes().split(b"\0")[0]
    assert os.fsdecode(argv0) == str(NODE_BIN / "claude")
