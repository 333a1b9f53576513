"""Sandbox: what confinement adds to a spawn, and to a request through the egress proxy.

- **spawn**: from ``TmuxRunner.spawn`` to the harness running (it creates a file in its tree;
  polled every 0.5 ms), without the sandbox and with it (``bwrap`` built by
  ``the_loop.runner.sandbox``, the layout of a real agent: system read-only, state dir, home,
  /tmp, /run hidden, tree and home read-write, own PID/IPC/UTS/user/network namespaces),
  alternating, in one run. SPEC §13: ≤ 30 ms more at p50.
- **proxy**: an HTTP request to a loopback server, direct and through the way a confined
  agent on ``network: allowlist`` reaches it (the in-sandbox forwarder
  ``runner/sandbox_forward.py`` on its proxy port, the unix socket, the daemon's egress proxy
  ``egress.py`` checking the agent's token and ``allowHosts``), alternating: on a new
  connection each (``CONNECT`` + request, what a fresh HTTPS connection pays) and on one kept
  tunnel (what each further request of a keep-alive connection pays).
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import http.server
import os
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path

from common import Figure, Report

from the_loop.agent import egress
from the_loop.agent.attention.spawn import issue_token
from the_loop.config import Config
from the_loop.context import open_ctx
from the_loop.runner import limits, sandbox
from the_loop.runner.tmux import TmuxRunner


def _spawn_ms(runner: TmuxRunner, root: Path, confined: bool, limited: bool = False) -> float:
    tree = root / f"tree-{uuid.uuid4().hex[:8]}"
    tree.mkdir()
    marker = tree / "ran"
    argv = ["sh", "-c", f"touch '{marker}'; exec sleep 30"]
    if confined:
        config = Config(stateDir=root / "state")
        home = root / "state" / "homes" / tree.name
        home.mkdir(parents=True)
        layout = sandbox.layout_for(
            config, state_dir=root / "state", config_file=None, tree=tree, home=home,
            argv=argv, env={},
        )  # fmt: skip
        layout.network = "none"
        held = limits.plan(limits.group_name(root / "state", tree.name), 512, 256)
        if not limited:
            held = limits.Plan()
        argv = limits.joined(sandbox.wrap(layout, limits.inside(argv, held)), held)
    target = f"loop-bench-{tree.name}"
    start = time.perf_counter()
    runner.spawn(target, argv, cwd=tree).unwrap()
    while not marker.exists():
        time.sleep(0.0005)
    elapsed = (time.perf_counter() - start) * 1000
    runner.kill_session(target)
    return elapsed


class _Hello(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")  # one segment

    def log_message(self, *_: object) -> None:
        pass


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(conn: http.client.HTTPConnection) -> float:
    start = time.perf_counter()
    conn.request("GET", "/")
    answer = conn.getresponse()
    assert answer.read() == b"ok", answer.status
    return (time.perf_counter() - start) * 1000


def _fresh_ms(port: int, proxy: int | None) -> float:
    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", proxy or port, timeout=10)
    if proxy is not None:
        conn.set_tunnel("127.0.0.1", port)
    _get(conn)
    conn.close()
    return (time.perf_counter() - start) * 1000


def proxy_figures(root: Path, runs: int) -> tuple[list[float], ...]:
    """Per-request ms (direct fresh, proxied fresh, direct kept, proxied kept)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = int(server.server_address[1])
    state = root / "proxy-state"
    config = root / "proxy.yaml"
    allowed = f"127.0.0.1:{port}"
    config.write_text(f"stateDir: {state}\nsandbox:\n  allowHosts: ['{allowed}']\n")
    ctx = open_ctx(config)
    token = issue_token(ctx.db, "bench:agent", work_item=None, transcript_root=None)
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    serving = loop.create_task(egress.egress_loop(ctx, stop))
    threading.Thread(target=loop.run_forever, daemon=True).start()
    socket_path = egress.egress_dir(state) / egress.SOCKET
    proxy = _free_port()
    forward = sandbox.forwarded(["sleep", "600"], socket_path, {proxy: "proxy"})
    env = {**os.environ, "THE_LOOP_AGENT": "bench:agent", "THE_LOOP_HOOK_TOKEN": token}
    child = subprocess.Popen(forward, env=env)
    out: tuple[list[float], ...] = ([], [], [], [])
    try:
        deadline = time.monotonic() + 10
        while True:  # the forwarder listening and the proxy serving
            try:
                _fresh_ms(port, proxy)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.01)
        direct = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        tunnel = http.client.HTTPConnection("127.0.0.1", proxy, timeout=10)
        tunnel.set_tunnel("127.0.0.1", port)
        _get(direct), _get(tunnel)
        for _ in range(runs):
            out[0].append(_fresh_ms(port, None))
            out[1].append(_fresh_ms(port, proxy))
            out[2].append(_get(direct))
            out[3].append(_get(tunnel))
    finally:
        child.kill()
        child.wait()
        loop.call_soon_threadsafe(stop.set)  # the proxy ends; its loop thread with the process
        assert not serving.cancelled()
        server.shutdown()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    report = Report(
        "sandbox",
        "Sandbox",
        "spawn to harness running, with and without bwrap, alternating in one run; a "
        "request direct and through the egress proxy",
    )
    works, why = sandbox.bwrap_works()
    if not works:
        report.note(f"bubblewrap unavailable: {why}")
        report.finish()
        return
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        runner = TmuxRunner(f"bench-sbx-{os.getpid()}", work_dir=root / "run")
        plain: list[float] = []
        boxed: list[float] = []
        held: list[float] = []
        enforced = limits.describe(512, 256)
        try:
            _spawn_ms(runner, root, False)  # the server's start is not a spawn
            for _ in range(args.runs):
                plain.append(_spawn_ms(runner, root, False))
                boxed.append(_spawn_ms(runner, root, True))
                held.append(_spawn_ms(runner, root, True, limited=True))
        finally:
            runner.kill_server()
            limits.sweep(root / "state")
    p50_plain, p50_boxed = statistics.median(plain), statistics.median(boxed)
    report.figure(Figure("sandbox.spawn.none.p50", "spawn, no sandbox, p50", p50_plain, "ms"))
    report.figure(Figure("sandbox.spawn.bwrap.p50", "spawn, bwrap, p50", p50_boxed, "ms"))
    report.figure(
        Figure(
            "sandbox.spawn.added.p50",
            "spawn: added by the sandbox, p50",
            p50_boxed - p50_plain,
            "ms",
            30,
        )
    )
    print(
        f"spawn p50: none {p50_plain:.1f} ms, bwrap {p50_boxed:.1f} ms, "
        f"added {p50_boxed - p50_plain:.1f} ms (target <= 30 ms)"
    )
    p50_held = statistics.median(held)
    report.figure(
        Figure("sandbox.spawn.limits.p50", "spawn, bwrap + memoryMb/pids, p50", p50_held, "ms")
    )
    print(f"spawn p50 with memoryMb 512, pids 256 ({'; '.join(enforced)}): {p50_held:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        fresh, fresh_proxied, kept, kept_proxied = proxy_figures(Path(tmp), args.runs * 5)
    for name, label, base, via in (
        ("fresh", "new connection", fresh, fresh_proxied),
        ("kept", "kept tunnel", kept, kept_proxied),
    ):
        added = statistics.median(via) - statistics.median(base)
        report.figure(
            Figure(f"sandbox.proxy.{name}.added.p50", f"proxy: added per request, {label}, p50",
                   added, "ms")
        )  # fmt: skip
        print(
            f"proxy, {label}, p50: direct {statistics.median(base):.2f} ms, through the proxy "
            f"{statistics.median(via):.2f} ms, added {added:.2f} ms"
        )
    report.finish()


if __name__ == "__main__":
    main()
