"""The read-only commands ``sessions list``, ``events``, ``status`` and ``standing list`` ask
the running daemon (``the_loop.cli.remote``, decision 0065) and print exactly what they print
from the store, byte for byte and with the same exit code, over one state with live and closed
sessions, usage priced by prefix, attention and events of every level; asking the daemon
loads neither pydantic nor the config models; and whatever the daemon cannot answer for this
very config (no daemon, another config file, an answer that is not 200) is read from the
store."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import Env
from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.work import Work
from the_loop.store import attention as attention_store
from the_loop.store import open_database
from the_loop.store import usage as usage_store
from the_loop.store.usage import Entry

AGE = re.compile(r"\b\d+[smhd] ago *")
PROBE = (
    "import sys\n"
    "from the_loop.cli import main\n"
    "try:\n"
    "    main.run(sys.argv[1:])\n"
    "finally:\n"
    "    sys.stderr.write(f\"\\nLOADED pydantic={'pydantic' in sys.modules}\\n\")\n"
)
REMOTE = "pydantic=False"
LOCAL = "pydantic=True"


def _twin(env: Env) -> Path:
    """A byte-for-byte copy of ENV's config under another name: no daemon was started on it,
    so a command reading it reads the store itself."""
    twin = env.root / "twin.yaml"
    shutil.copyfile(env.config_path, twin)
    return twin


def _run(env: Env, args: list[str], fast: bool) -> tuple[int, str, str, str]:
    """Exit code, stdout, stderr (without the probe line) and the probe line of ARGS; FAST
    reads ENV's own config (the daemon's, when one runs), else its twin (the store)."""
    process_env = env.process_env()
    if not fast:
        process_env["THE_LOOP_CONFIG"] = str(_twin(env))
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        env=process_env,
        cwd=env.root,
        timeout=60,
    )
    err, _, probe = proc.stderr.rpartition("\nLOADED ")
    return proc.returncode, proc.stdout, err, probe.strip()


def _ageless(answer: tuple[int, str, str]) -> tuple[int, str, str]:
    """ANSWER with every ``12s ago`` as ``N ago`` and the spaces that pad it as one (the two
    runs are a moment apart: ``9s ago`` then ``10s ago`` pads its table column less)."""
    code, out, err = answer
    return code, AGE.sub("N ago ", out), err


def _steady(text: str) -> list[str]:
    """TEXT without what changes from one moment to the next (uptime, free memory)."""
    lines = [re.sub(r", up \d+[smhd]\)$", ")", line) for line in text.splitlines()]
    return [re.sub(r"\d+ MiB available", "N MiB available", line) for line in lines]


def _state(work: Work) -> None:
    """Three work items (one closed), usage of a priced and an unpriced model, attention."""
    for n in (15, 16, 17):
        r = work.dispatch("issue_comment", P.issue_comment_event("the-loop start", number=n))
        assert r.exit_code == 0, r.stdout + r.stderr
    closed = work.dispatch("issues", P.issues_event("closed", number=17))
    assert closed.exit_code == 0, closed.stdout + closed.stderr
    db = open_database(work.env.state_dir)
    ids = [str(r[0]) for r in db.connect().execute("SELECT id FROM sessions ORDER BY created_at")]
    now = time.time()
    with db.transaction() as tx:
        usage_store.add_entries(
            tx,
            ids[0],
            [
                Entry("m1", "message", "claude-sonnet-4-5-20250929", 1200, 340, 50, 7000),
                Entry("m2", "message", "mystery-model", 10, 20),
                Entry("t1", "turn"),
                Entry("t2", "turn"),
            ],
            "2026-12-01",
            now,
        )
        for agent, item in ((ids[0], "github:octo/repo#15"), (ids[2], "github:octo/repo#17")):
            attention_store.register(
                tx, agent, work_item=item, standing=None, harness="fake", requester="alice", now=now
            )


@pytest.fixture
def state(work: Work) -> Work:
    work.configure(
        budgets={"prices": {"claude-sonnet": {"input": 3, "output": 15, "cacheRead": 0.3}}}
    )
    _state(work)
    return work


COMMANDS = [
    ["sessions", "list"],
    ["sessions", "list", "--status", "active"],
    ["sessions", "list", "--status=closed", "--limit", "1"],
    ["sessions", "list", "--status", "paused"],
    ["events"],
    ["events", "--limit", "5", "--format", "json"],
    ["events", "-n", "7", "--format", "jsonl"],
    ["events", "--type", "session.*", "-t", "dispatch.*", "--limit=500"],
    ["events", "--level", "warning", "--format", "json"],
    ["events", "--type", "no.such.*"],
]


def test_every_form_prints_what_the_store_path_prints(state: Work, daemon: Daemon) -> None:
    env = state.env
    for args in COMMANDS:
        local = _run(env, args, fast=False)
        remote = _run(env, args, fast=True)
        assert local[3] == LOCAL, (args, local)
        assert remote[3] == REMOTE, (args, remote)
        assert _ageless(remote[:3]) == _ageless(local[:3]), args
    listed = _run(env, ["sessions", "list"], fast=True)[1]
    assert re.search(r"0\.01\d\d \+ unpriced", listed)  # a priced and an unpriced model
    assert "exited" in listed  # the closed session's attention


def test_status_of_a_running_daemon_matches(state: Work, daemon: Daemon) -> None:
    env = state.env
    for args in (["status"], ["status", "--format", "json"]):
        local = _run(env, args, fast=False)
        remote = _run(env, args, fast=True)
        assert remote[3] == REMOTE, remote
        assert remote[0] == local[0] == 0, (local, remote)
        if args[-1] == "json":
            ignore = ("uptimeSeconds",)
            a, b = json.loads(local[1]), json.loads(remote[1])
            for key in ignore:
                a.pop(key, None), b.pop(key, None)
            assert a["health"]["status"] == b["health"]["status"] == "ok"
            assert a.keys() == b.keys() and a["sessions"] == b["sessions"]
            assert a["pid"] == b["pid"] == daemon.proc.pid  # type: ignore[union-attr]
        else:
            # the twin config is not the daemon's: the store path says so in a last line
            assert "warning: this command reads" in local[1].splitlines()[-1]
            assert _steady(remote[1]) == _steady(local[1])[:-1]
            assert "  sessions:  2 active, 1 closed" in remote[1]
            assert "warning" not in remote[1]


@pytest.mark.parametrize(
    "args",
    [
        ["sessions", "list", "--status", "bogus"],
        ["sessions", "list", "--limit", "0"],
        ["sessions", "list", "--help"],
        ["events", "--level", "loud"],
        ["events", "--limit", "100001"],
        ["events", "--since", "yesterday"],
    ],
)
def test_bad_input_says_what_the_store_path_says(
    state: Work, daemon: Daemon, args: list[str]
) -> None:
    env = state.env
    remote = _run(env, args, fast=True)
    local = _run(env, args, fast=False)
    assert remote[0] == local[0] != 0 or args[-1] == "--help", (remote, local)
    assert _ageless(remote[:3]) == _ageless(local[:3])


@pytest.mark.parametrize("args", [["sessions", "list"], ["events", "--limit", "5"], ["status"]])
def test_without_a_daemon_the_store_is_read(state: Work, args: list[str]) -> None:
    env = state.env
    answer = _run(env, args, fast=True)
    assert answer[3] == LOCAL, answer
    assert answer[0] == (1 if args == ["status"] else 0), answer
    assert _ageless(answer[:3]) == _ageless(_run(env, args, fast=False)[:3])


def test_a_config_the_daemon_does_not_run_on_is_read_from_the_store(
    state: Work, daemon: Daemon
) -> None:
    env = state.env
    assert _run(env, ["sessions", "list"], fast=True)[3] == REMOTE
    other = env.root / "other.yaml"
    other.write_text(env.config_path.read_text() + "\n# not what the daemon read\n")
    for args in (["--config", str(other), "sessions", "list"], ["-c", str(other), "status"]):
        assert _run(env, args, fast=True)[3] == LOCAL, args


@pytest.fixture
def standing_daemon(work: Work) -> Iterator[Daemon]:
    """A running daemon with declared standing sessions that do not start by themselves (one
    with a problem), beside the work items."""
    work.configure(
        github={"enabled": True},
        standing={
            "enabled": True,
            "sessions": [
                {"name": "supervisor", "prompt": "watch the queue", "autoStart": False},
                {"name": "broken", "promptFile": "missing-brief.md", "autoStart": False},
            ],
        },
    )
    _state(work)
    d = Daemon(work)
    d.start()
    yield d
    d.stop()


def test_standing_list_of_a_running_daemon_matches(standing_daemon: Daemon) -> None:
    daemon = standing_daemon
    env = daemon.work.env
    created = daemon.api(
        "POST", "/standing", json={"name": "helper", "prompt": "tidy the docs", "start": True}
    )
    assert created.status_code == 201, created.text
    local = _run(env, ["standing", "list"], fast=False)
    remote = _run(env, ["standing", "list"], fast=True)
    assert local[3] == LOCAL, local
    assert remote[3] == REMOTE, remote
    assert _ageless(remote[:3]) == _ageless(local[:3])
    listed = remote[1]
    assert re.search(r"^helper +created +running", listed, re.M), listed
    assert re.search(r"^supervisor +declared +absent", listed, re.M), listed
    assert "note: broken: " in listed  # its problem, as the store path says it
    as_json = _run(env, ["standing", "list", "--format", "json"], fast=True)
    assert as_json[3] == REMOTE and json.loads(as_json[1]) == daemon.api("GET", "/standing").json()


def _waiting_connections(port: int) -> int:
    """How many connections to the listening socket on PORT wait to be accepted (the kernel's
    accept queue, ``rx_queue`` of a LISTEN row in /proc/net/tcp)."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if int(fields[1].split(":")[1], 16) == port and fields[3] == "0A":
            return int(fields[4].split(":")[1], 16)
    raise AssertionError(f"nothing listens on port {port}")


def test_status_of_a_daemon_that_does_not_answer_asks_it_once(state: Work, daemon: Daemon) -> None:
    """A hung daemon (stopped here) is asked once, for TIMEOUT, then the store is read and the
    report says the daemon does not answer; it was asked twice (4 s) before."""
    assert daemon.proc is not None
    port = int(daemon.url.rsplit(":", 1)[1])
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        assert _waiting_connections(port) == 0
        code, out, err, _ = _run(state.env, ["status"], fast=True)
        assert code == 1, (out, err)
        assert "does not answer" in out, out
        assert _waiting_connections(port) == 1
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
