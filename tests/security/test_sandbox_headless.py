"""The headless (process) runner confines its agents as the tmux runner does (SPEC §18; one
place decides what a sandbox holds: ``agent/confine.py``): a work item's headless run whose
program probes what it can reach finds nothing of the control plane under
``sandbox.mode: bwrap`` — state database, config file, the spawning process's ``/proc``
environment, the tmux socket, another worktree, a CLI verb against the real state, the GitHub
token — and everything under ``sandbox.mode: none`` (so each probe can fail). Its worktree
stays writable and its output reaches the transcript as before."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tests.fakes import payloads as P
from tests.work import Work

pytestmark = pytest.mark.bwrap

PROBE = r"""
check() { if eval "$2" >/dev/null 2>&1; then echo "$1:OPEN"; else echo "$1:DENIED"; fi; }
cat >/dev/null
check database "head -c 16 '{state}/the-loop.db' | grep -q SQLite"
check config "grep -q stateDir '{config}'"
check other-tree "cat '{other}/secret.txt'"
check spawner-environ "cat /proc/{spawner}/environ | tr '\0' '\n' | grep -q ="
check tmux-socket "tmux -L {socket} list-sessions"
check cli-verb "THE_LOOP_CONFIG='{config}' '{python}' -m the_loop sessions list"
check github-token "test -n \"$FAKE_GH_TOKEN\""
check tree-writable "touch written-inside"
"""
CLOSED = {"database", "config", "other-tree", "spawner-environ", "tmux-socket", "cli-verb"}
CLOSED |= {"github-token"}


def probe(work: Work, mode: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    env = work.env
    other = env.state_dir / "workspaces" / "someone-else"
    other.mkdir(parents=True)
    (other / "secret.txt").write_text("another agent's work\n")
    tools = env.root / "tools"
    tools.mkdir()
    script = tools / "probe.sh"
    work.tmux("new-session", "-d", "-s", "neighbour", "sleep 600")  # a server to reach
    script.write_text(
        PROBE.replace("{state}", str(env.state_dir))
        .replace("{config}", str(env.config_path))
        .replace("{other}", str(other))
        .replace("{spawner}", str(os.getpid()))
        .replace("{socket}", env.socket)
        .replace("{python}", sys.executable)
    )
    work.configure(
        harnesses={"probe": {"adapter": "command", "headless": ["sh", str(script)]}},
        routing={"defaultHarness": "probe", "runner": "process"},
        github={"tokenEnv": "FAKE_GH_TOKEN"},
        sandbox={"mode": mode, "network": "none", "readOnlyPaths": [str(tools)]},
    )
    monkeypatch.setenv("FAKE_GH_TOKEN", "ghp_fake")  # the spawning process holds it
    done = work.dispatch("issue_comment", P.issue_comment_event("the-loop do probe"), "h-1")
    assert done.exit_code == 0 and "spawned" in done.stdout, done.stdout + done.stderr
    transcripts = list((env.state_dir / "transcripts").glob("*.jsonl"))
    assert len(transcripts) == 1, transcripts
    text = transcripts[0].read_text()
    results = dict(line.split(":", 1) for line in text.split() if ":" in line)
    cwd = Path(work.session_json("github:octo/repo#15")["cwd"])
    results["written"] = "yes" if (cwd / "written-inside").exists() else "no"
    return results


def test_a_confined_headless_agent_reaches_nothing_of_the_control_plane(
    work: Work, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = probe(work, "bwrap", monkeypatch)
    assert {k for k, v in results.items() if v == "DENIED"} == CLOSED, results
    assert results["tree-writable"] == "OPEN" and results["written"] == "yes", results


def test_unconfined_the_same_headless_probes_succeed(
    work: Work, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = probe(work, "none", monkeypatch)
    assert {k for k, v in results.items() if v == "OPEN"} >= CLOSED, results
