"""Confinement (SPEC §18) with real bubblewrap, real tmux and the real daemon: an agent whose
program probes what it can reach (a standing session running a shell script as its `command`
harness) finds nothing of the control plane under `sandbox.mode: bwrap`, and everything under
`sandbox.mode: none` (so each probe can fail). The network probes go through the daemon's
egress proxy: an allowlisted loopback port answers, any other is refused and logged."""

from __future__ import annotations

import json
import os
import socketserver
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.work import Work
from the_loop.daemon.serve import read_info

pytestmark = pytest.mark.bwrap

PROBE = r"""
check() { if eval "$2" >/dev/null 2>&1; then echo "$1:OPEN"; else echo "$1:DENIED"; fi; }
{
check database "head -c 16 '{state}/the-loop.db' | grep -q SQLite"
check api-token "test -s '{state}/api-token' && cat '{state}/api-token'"
check tmux-dir "ls -A '{tmuxdir}' | grep -q ."
check config "grep -q stateDir '{config}'"
check other-tree "cat '{other}/secret.txt'"
check other-home "test $(ls '{state}/homes' | wc -l) -gt 1"
check daemon-environ "cat /proc/{daemon}/environ | tr '\0' '\n' | grep -q ="
check tmux-socket "tmux -L {socket} list-sessions"
check cli-verb "THE_LOOP_CONFIG='{config}' '{python}' -m the_loop standing list | grep -q probe"
check github-token "test -n \"$FAKE_GH_TOKEN\""
check other-spool "ls '{state}/hook/spool' | grep -v -x \"$(basename "$THE_LOOP_HOOK_SPOOL")\" \
  | grep -q ."
check loopback-refused "'{python}' -c 'import socket; socket.create_connection((\"127.0.0.1\", \
{closed}), 3)'"
check proxy-refused "'{python}' {fetch} {closed}"
check loopback-allowed "'{python}' -c 'import socket; socket.create_connection((\"127.0.0.1\", \
{open}), 3)'"
check proxy-allowed "'{python}' {fetch} {open}"
check proxy-said-403 "'{python}' {fetch} {closed}; test \$? -eq 3"
check tree-writable "touch '{tree}/written-inside'"
check own-cli-writable "touch '{bin}/written-inside'"
check other-cli-writable "touch '{otherbin}/written-inside'"
check own-uid "test \"$(id -u)\" != 0"
} > '{tree}/probe.out' 2>&1
mv '{tree}/probe.out' '{tree}/probe.txt'
echo probed
exec sleep 600
"""
FETCH = """
import os, socket, sys
port = int(sys.argv[1])
proxy = os.environ.get("HTTPS_PROXY", "")
if not proxy:
    socket.create_connection(("127.0.0.1", port), 3)
    sys.exit(0)
host, _, pport = proxy.removeprefix("http://").rpartition(":")
s = socket.create_connection((host, int(pport)), 3)
s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n" % port)
answer = s.recv(100)
sys.exit(0 if answer.startswith(b"HTTP/1.1 200") else 3 if b" 403 " in answer else 1)
"""
PRIVILEGED = "127.0.0.1:9"
TMP = Path("/tmp")
TMUX_DIR = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
"""Where the tests' tmux servers keep their sockets."""
CLOSED = {
    "database",
    "api-token",
    "tmux-dir",
    "own-cli-writable",
    "other-cli-writable",
    "config",
    "other-tree",
    "other-home",
    "daemon-environ",
    "tmux-socket",
}
CLOSED |= {"cli-verb", "github-token", "other-spool"}
CLOSED |= {"loopback-refused", "proxy-refused"}


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        self.request.sendall(b"hi\n")


@pytest.fixture
def servers() -> Iterator[tuple[int, int]]:
    """Two TCP servers on loopback: one allowlisted, one not."""
    made = [socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo) for _ in range(2)]
    for server in made:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield made[0].server_address[1], made[1].server_address[1]
    finally:
        for server in made:
            server.shutdown()
            server.server_close()


def probe(
    work: Work,
    mode: str,
    ports: tuple[int, int],
    cwd: Path | None = None,
    read_only: tuple[Path, ...] = (),
) -> dict[str, str]:
    """What the probe finds, run as standing session `probe` in CWD (default: its own tree,
    ``tree``, where it writes its results either way), READ_ONLY its
    ``sandbox.readOnlyPaths``."""
    env = work.env
    tree, other = env.root / "tree", env.root / "other-tree"
    for path in (tree, other):
        path.mkdir()
    (other / "secret.txt").write_text("another agent's work\n")
    fetch = tree / "fetch.py"
    fetch.write_text(FETCH)
    script = env.root / "bin" / "probe.sh"  # the agent's CLI, as `claude` is: its own program
    script.parent.mkdir()
    harness = {"adapter": "command", "interactive": [str(script)]}
    other_cli = env.root / "other-bin" / "other-cli"  # another agent CLI installed here
    other_cli.parent.mkdir()
    other_cli.write_text("#!/bin/sh\nexec sleep 600\n")
    other_cli.chmod(0o755)
    idle = {"adapter": "command", "interactive": ["sh", "-c", "echo up; exec sleep 600"]}
    env.write_config(
        harnesses={
            "probe": harness,
            "idle": idle,
            "other": {"adapter": "command", "interactive": [str(other_cli)]},
        },
        routing={"defaultHarness": "probe"},
        standing={
            "enabled": True,
            "sessions": [
                {"name": "probe", "cwd": str(cwd or tree), "autoStart": False},
                {"name": "neighbour", "harness": "idle", "cwd": str(other), "autoStart": False},
            ],
        },
        github={"tokenEnv": "FAKE_GH_TOKEN"},
        # 127.0.0.1:9 cannot be mirrored (a port below 1024): it is left out, and the agent
        # starts all the same (it used to fail at once, its forwarder unable to listen there)
        sandbox={
            "mode": mode,
            "network": "allowlist",
            "allowHosts": [f"127.0.0.1:{ports[0]}", PRIVILEGED],
            "readOnlyPaths": [str(p) for p in read_only],
        },
    )
    daemon = Daemon(work)
    daemon.start(FAKE_GH_TOKEN="ghp_fake")
    try:
        info = read_info(env.state_dir)
        assert info is not None
        script.write_text(
            "#!/bin/sh\n"
            + PROBE.replace("{state}", str(env.state_dir))
            .replace("{config}", str(env.config_path))
            .replace("{other}", str(other))
            .replace("{tree}", str(tree))
            .replace("{daemon}", str(info.pid))
            .replace("{socket}", env.socket)
            .replace("{python}", sys.executable)
            .replace("{fetch}", str(fetch))
            .replace("{open}", str(ports[0]))
            .replace("{closed}", str(ports[1]))
            .replace("{tmuxdir}", str(TMUX_DIR))
            .replace("{bin}", str(script.parent))
            .replace("{otherbin}", str(other_cli.parent))
        )
        script.chmod(0o755)
        cli_env = {**env.process_env(), "FAKE_GH_TOKEN": "ghp_fake"}  # as an operator has it
        for name in ("neighbour", "probe"):
            started = env.run("standing", "start", name, env=cli_env)
            assert started.exit_code == 0, started.stdout + started.stderr
        out = tree / "probe.txt"
        wait_until(out.exists, 60, what="the probe's results")
        results = dict(line.split(":", 1) for line in out.read_text().split() if ":" in line)
        doctor = json.loads(env.run("doctor", "--format", "json").stdout)
        (sandbox,) = [c for c in doctor["checks"] if c["name"] == "sandbox"]
        results["doctor"] = f"{sandbox['status']}: {sandbox['detail']}"
        if mode == "bwrap":
            refused = daemon.api("GET", "/events", params={"type": "sandbox.egress_refused"})
            results["refusals"] = " ".join(
                f"{e['payload']['host']}@{e['payload']['agent']}" for e in refused.json()
            )
        return results
    finally:
        env.run("standing", "stop", "probe")
        env.run("standing", "stop", "neighbour")
        daemon.stop()


def test_a_confined_agent_reaches_nothing_of_the_control_plane(
    work: Work, servers: tuple[int, int]
) -> None:
    results = probe(work, "bwrap", servers)
    assert {k for k, v in results.items() if v == "DENIED"} == CLOSED, results
    allowed = ("loopback-allowed", "proxy-allowed", "proxy-said-403", "tree-writable", "own-uid")
    for name in allowed:
        assert results[name] == "OPEN", results
    assert (work.env.root / "tree" / "written-inside").exists()
    refused = f"127.0.0.1:{servers[1]}"
    assert f"{refused}@standing:probe" in results["refusals"].split(), results
    # the operator is told the agents cannot reach the privileged port, and how to fix it
    assert results["doctor"].startswith("warning: "), results["doctor"]
    assert f"a confined agent cannot reach {PRIVILEGED}: a port below 1024" in results["doctor"]


@pytest.mark.parametrize("where", ["installation", "tmp", "read-only"])
def test_a_tree_that_holds_the_control_plane_shows_none_of_it(
    work: Work, servers: tuple[int, int], where: str
) -> None:
    """An agent whose working directory holds the state dir, the config file and the tmux
    sockets (a standing session working in the operator's home, which holds the default
    state dir; here the test's installation, or all of /tmp) sees none of them: binding its
    tree showed them all, the API token and the database included. The same for a
    `sandbox.readOnlyPaths` entry that holds them (read-only, it showed them too)."""
    root = work.env.root
    if where == "read-only":
        results = probe(work, "bwrap", servers, read_only=(root,))
    else:
        results = probe(work, "bwrap", servers, cwd=root if where == "installation" else TMP)
    inside = {"other-tree"}  # the neighbour's directory lies in its view: the operator's choice
    assert {k for k, v in results.items() if v == "DENIED"} == CLOSED - inside, results
    for name in ("loopback-allowed", "proxy-allowed", "tree-writable", "own-uid", *inside):
        assert results[name] == "OPEN", results


def test_unconfined_the_same_probes_succeed(work: Work, servers: tuple[int, int]) -> None:
    results = probe(work, "none", servers)
    assert "cannot reach" not in results["doctor"], results["doctor"]  # unconfined: it can
    opened = {k for k, v in results.items() if v == "OPEN"}
    # the state dir is open to it whole (database); homes and own spools exist only confined
    assert opened >= CLOSED - {"other-home", "other-spool"}, results
