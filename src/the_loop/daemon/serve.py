"""The daemon: one process per state dir serving the HTTP app and the background work.

``serve`` runs in the foreground; ``start`` runs it detached and waits until it is healthy;
``stop`` asks it to finish (SIGTERM) and waits; ``status`` asks its health endpoint. One daemon
per state dir is enforced by an ``flock`` on ``daemon.lock``, not by a pid file alone.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from the_loop import __version__
from the_loop import events as ev
from the_loop.cluster import nodes
from the_loop.config import record_running
from the_loop.context import Ctx
from the_loop.errors import AlreadyRunning, Unavailable
from the_loop.instance import INFO_NAME, DaemonInfo, acquire_lock, ask, write_info
from the_loop.instance import daemon_running as daemon_running
from the_loop.instance import read_info as read_info
from the_loop.views.health import Health

if TYPE_CHECKING:
    import asyncio

LOG_NAME = "daemon.log"
SOURCE = "daemon"


SWITCH_INTERVAL_SECONDS = 0.0005
"""The interpreter's thread switch interval in the daemon (CPython's default is 5 ms)."""


LOOP = "uvloop"
"""The event loop the daemon serves on: uvicorn's on libuv (decision 0073). Per request it
costs about two thirds of the standard library's loop: a refused webhook took 0.23 ms of the
daemon's CPU on asyncio's loop and 0.16 ms on this one (``bench/analysis.md`` item 21)."""


SEND_BUFFER = 256 * 1024
"""The send buffer of every accepted connection (set on the listening socket, which they
inherit). A new connection starts with 16 KB and grows it only as the peer acknowledges: a
100-session answer (about 90 KB) then left the event loop waiting to write the rest, 4 ms more
than on a connection already grown — and every CLI command opens a new one."""


def bind_socket(host: str, port: int, backlog: int) -> socket.socket:
    """Bind the listening socket up front so the real port is known before serving.

    The protocol is named (``IPPROTO_TCP``): asyncio turns Nagle off (``TCP_NODELAY``) only on
    connections accepted from a socket that says it is TCP, and with Nagle on every response
    written in two parts (headers, body) waited about 40 ms for the client's delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise Unavailable(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(backlog)
    sock.set_inheritable(True)
    return sock


BackgroundTask = Callable[[Ctx, "asyncio.Event"], Coroutine[Any, Any, None]]
BACKGROUND_TASKS: list[tuple[str, BackgroundTask]] = []


def background(name: str) -> Callable[[BackgroundTask], BackgroundTask]:
    """Register a coroutine the daemon runs for its whole life (it must return on STOP)."""

    def register(fn: BackgroundTask) -> BackgroundTask:
        BACKGROUND_TASKS.append((name, fn))
        return fn

    return register


def serve(ctx: Ctx, banner: Callable[[str], None] | None = None) -> None:
    """Run the daemon in the foreground until SIGTERM/SIGINT; one per state dir."""
    # lazy: start-up (commands that only talk to the daemon do not load the web stack)
    import uvicorn

    from the_loop.daemon.server import Server
    from the_loop.runner import limits as agent_limits
    from the_loop.store.intake_writer import writer_for
    from the_loop.web import limits
    from the_loop.web.app import create_app
    from the_loop.web.auth import check_bind

    ctx.loaded.require_valid_file()
    check_bind(ctx)
    lock = acquire_lock(ctx.state_dir)
    nodes.claim(ctx)  # one daemon per node name (with SQLite: the lock above)
    ctx.started_with = ctx.loaded
    cfg = ctx.config.server
    sock = bind_socket(cfg.host, cfg.port, limits.LISTEN_BACKLOG)
    port = int(sock.getsockname()[1])
    host_for_url = f"[{cfg.host}]" if ":" in cfg.host else cfg.host
    url = f"http://{host_for_url}:{port}"
    info = DaemonInfo(
        pid=os.getpid(),
        url=url,
        host=cfg.host,
        port=port,
        version=__version__,
        started_at=time.time(),
        config_path=str(ctx.loaded.path.absolute()) if ctx.loaded.path else None,
    )
    nodes.register(ctx, ctx.config.node.url or url)  # what other nodes reach
    app = create_app(ctx, daemon=info, background=run_background)
    server = Server(
        uvicorn.Config(
            app,
            loop=LOOP,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=3,
            access_log=False,
            server_header=False,
            # request heads and connections bounded (SPEC §11): limits.py for httptools,
            # this for h11
            http=limits.protocol_for(cfg.limits),
            h11_max_incomplete_event_size=limits.h11_limit,
            timeout_keep_alive=max(1, round(cfg.limits.idle_seconds)),
            backlog=limits.LISTEN_BACKLOG,
        )
    )

    # Installed before anyone can find us (daemon.json): a signal before uvicorn installs its
    # own handlers asks it to exit as soon as it runs; the one uvicorn re-raises when it is
    # done lands here too, so the shutdown below always runs.
    def request_exit(*_: object) -> None:
        server.should_exit = True

    signal.signal(signal.SIGTERM, request_exit)
    signal.signal(signal.SIGINT, request_exit)
    # `kill -USR1 <pid>` prints every thread's stack to the daemon's stderr (a hung daemon
    # can say where it hangs without a debugger)
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    # Threads that mostly wait (the acceptance writer, between its SQLite calls) take the GIL
    # back sooner from busy ones (the event loop under many connections, the inbox worker):
    # under 32 connections the writer's group commit took 14 to 20 ms at CPython's 5 ms and
    # 11 to 13 ms at 0.5 ms (bench/analysis.md)
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    agent_limits.sweep(ctx.state_dir)  # empty cgroups a crashed daemon left (a live agent's stay)
    write_info(ctx.state_dir, info)
    record_running(ctx.state_dir, ctx.loaded, info.pid)
    ev.emit(ctx.db, "daemon.started", source=SOURCE, pid=info.pid, url=url, version=__version__)
    for warning in ctx.config.warnings():
        ev.emit(ctx.db, "config.warning", source=SOURCE, message=warning)
    if banner:
        banner(url)
    try:
        server.run(sockets=[sock])
    finally:
        writer_for(ctx.db).close()  # the sampled rejections still queued
        ev.emit(ctx.db, "daemon.stopped", source=SOURCE, pid=info.pid)
        (ctx.state_dir / INFO_NAME).unlink(missing_ok=True)
        agent_limits.sweep(ctx.state_dir)  # the cgroups of agents that are gone
        lock.release()


async def run_background(ctx: Ctx, stop: asyncio.Event) -> list[asyncio.Task[None]]:
    """Start every background task, each supervised (``the_loop.supervise``: restarted with
    backoff after a fault or a bug, reported by health meanwhile); they end when STOP is set."""
    # lazy: start-up (`status`, `stop` and `doctor` import this module, not the workers)
    import asyncio

    from the_loop.agent.attention.channel import hook_channel_loop
    from the_loop.agent.attention.notice import attention_loop
    from the_loop.agent.egress import egress_loop
    from the_loop.agent.spend.service import spend_loop
    from the_loop.cluster.loop import node_loop
    from the_loop.daemon import housekeeping
    from the_loop.intake.github_poller import poll_loop
    from the_loop.intake.worker import inbox_loop
    from the_loop.outbox.drain import outbox_loop
    from the_loop.outbox.slack_sender import slack_loop
    from the_loop.supervise import supervised

    builtin: list[tuple[str, BackgroundTask]] = [
        ("node", node_loop),
        ("checkpoint", housekeeping.checkpoint_loop),
        ("prune-events", housekeeping.prune_loop),
        ("reload-config", housekeeping.reload_loop),
        ("inbox", inbox_loop),
        ("outbox", outbox_loop),
        ("poller", poll_loop),
        ("standing-autostart", housekeeping.standing_autostart),
        ("reconciler", housekeeping.reconcile_loop),
        ("integrity", housekeeping.integrity_loop),
        ("attention", attention_loop),
        ("hook-channel", hook_channel_loop),
        ("egress", egress_loop),
        ("slack", slack_loop),
        ("spend", spend_loop),
    ]
    return [
        asyncio.create_task(supervised(name, fn, ctx, stop), name=name)
        for name, fn in [*builtin, *BACKGROUND_TASKS]
    ]


class DaemonStatus(BaseModel):
    """What a client learns by asking the daemon of a state dir: whether it runs, where, and
    the verdict, figures and problems of its ``Health``."""

    healthy: bool
    running: bool
    pid: int | None = None
    url: str | None = None
    version: str | None = None
    uptime_seconds: float | None = None
    detail: dict[str, Any] = {}
    problems: list[str] = []


def probe_health(ctx: Ctx, timeout: float = 2.0) -> DaemonStatus:
    """Ask the daemon of CTX's state dir for its health; never raises."""
    state_dir = ctx.state_dir
    info = read_info(state_dir)
    if not daemon_running(state_dir) or info is None:
        return DaemonStatus(healthy=False, running=False, problems=["the-loop is not running"])
    found = DaemonStatus(healthy=False, running=True, pid=info.pid, url=info.url)
    from the_loop.web.auth import client_token  # lazy: start-up (the web stack's token module)

    try:
        status, body, _ = ask(info.url, "/api/v1/health", client_token(ctx), timeout)
        health = Health.model_validate_json(body) if status == 200 else None
    except (OSError, ValueError) as exc:
        found.problems = [f"the daemon does not answer at {info.url}: {exc}"]
        return found
    found.version = info.version
    found.uptime_seconds = round(time.time() - info.started_at, 1)
    if health is None:
        found.problems = [f"the daemon's health endpoint answered HTTP {status}"]
        return found
    found.healthy, found.detail, found.problems = health.ok, health.detail, health.problems
    return found


def start_detached(
    ctx: Ctx, timeout: float = 30.0, on_wait: Callable[[], None] | None = None
) -> DaemonStatus:
    """Start ``the-loop serve`` in the background and wait until it reports healthy."""
    # lazy: start-up (the token module loads only when a daemon is started)
    from the_loop.web.auth import check_bind

    ctx.loaded.require_valid_file()
    check_bind(ctx)
    state_dir = ctx.state_dir
    if daemon_running(state_dir):
        info = read_info(state_dir)
        raise AlreadyRunning(f"the-loop is already running{f' at {info.url}' if info else ''}")
    argv = [sys.executable, "-m", "the_loop"]
    if ctx.loaded.path is not None:
        argv += ["--config", str(ctx.loaded.path.absolute())]
    argv.append("serve")
    log_path = state_dir / LOG_NAME
    with log_path.open("ab") as log:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Unavailable(
                f"the daemon exited with status {proc.returncode}; "
                f"see {log_path}:\n{_tail(log_path)}"
            )
        info = read_info(state_dir)
        if info is not None and info.pid == proc.pid:
            health = probe_health(ctx, timeout=1.0)
            if (
                health.running
                and health.url
                and not any("does not answer" in p for p in health.problems)
            ):
                return health
        if on_wait:
            on_wait()
        time.sleep(0.05)
    raise Unavailable(f"the daemon did not become healthy within {timeout:.0f}s; see {log_path}")


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


class StopResult(BaseModel):
    """What ``stop_daemon`` did: whether a daemon ran (its pid), whether its process has
    exited, whether it had to be killed after the grace period, and how long it took."""

    running: bool
    pid: int | None = None
    exited: bool = False
    killed: bool = False
    seconds: float = 0.0


def stop_daemon(state_dir: Path, timeout: float = 10.0, kill_wait: float = 5.0) -> StopResult:
    """SIGTERM the daemon of STATE_DIR and wait until its process has exited (not only its
    lock: the lock goes before the interpreter has finished); after TIMEOUT seconds SIGKILL
    it and wait up to KILL_WAIT more. ``running`` is false when no daemon ran."""
    info = read_info(state_dir)
    if not daemon_running(state_dir) or info is None:
        return StopResult(running=False)
    t0 = time.monotonic()
    try:
        os.kill(info.pid, signal.SIGTERM)
    except ProcessLookupError:
        return StopResult(running=False)
    result = StopResult(running=True, pid=info.pid)
    if not wait_process_gone(info.pid, timeout):
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGKILL)
        result.killed = True
        if not wait_process_gone(info.pid, kill_wait):
            result.seconds = round(time.monotonic() - t0, 2)
            return result
    result.exited = True
    result.seconds = round(time.monotonic() - t0, 2)
    return result


def wait_process_gone(pid: int, timeout: float) -> bool:
    """Poll until process PID has exited (a zombie counts as exited); False after TIMEOUT."""
    deadline = time.monotonic() + timeout
    while not process_gone(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def process_gone(pid: int) -> bool:
    """True when no process PID runs any more (exited, or a zombie waiting to be reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("utf-8")
    except OSError:
        return False  # no procfs (macOS): the signal reached it, so it runs
    return stat.rpartition(")")[2].split()[0] == "Z"
