"""``the-loop hook``: one Claude Code hook, read from stdin, reported to the daemon.

The harness runs this on every hook the settings passed at spawn name (see
``the_loop.harness.claude_hooks``). The environment the-loop gave the agent holds its key
(``THE_LOOP_AGENT``), its per-session secret (``THE_LOOP_HOOK_TOKEN``) and the hook channel's
directory (``THE_LOOP_HOOK_DIR``); without them the hook does nothing. It sends one JSON line
``{token, agent, report, kind, data}`` to the daemon's socket (``<dir>/daemon.sock``) and waits
for the one-line acknowledgement; while the daemon is not listening (it restarts) it writes the
same line to its own spool directory (``THE_LOOP_HOOK_SPOOL``, else ``<dir>/spool/``;
temporary file + rename), which the daemon applies when it is back. It has no database
address and writes nothing but its own reports: the daemon (``the_loop.agent.attention.channel``)
decides what a report may change.

A ``PermissionRequest`` keeps its connection and waits for the daemon's decision line, then
prints the Claude Code decision JSON it carries; a dropped connection is opened again (every
half second, for as long as Claude Code lets the hook run) and the report sent again under
the same id. A prompt closed without a decision prints nothing: the harness shows its own
dialog.

It is run often, so it does as little as it can: it passes the harness's JSON on as it came
(the daemon parses and checks it), reads the daemon's plain-text replies, and imports only
``os``, ``sys``, ``time`` and ``_socket``; the console script dispatches to it before the CLI
is imported. It never fails the harness: any problem ends it with status 0 and a line on
stderr.

Run as ``the-loop hook codex-notify [PROGRAM …] JSON`` it is Codex's turn-complete ``notify``
program (``the_loop.harness.codex_notify``): an ``agent-turn-complete`` is reported the same
way; then the operator's own notify PROGRAM, if any, runs with the same JSON.
"""

from __future__ import annotations

import _socket
import os
import sys
import time

TYPE_CHECKING = False
if TYPE_CHECKING:  # the hook runs often: it imports no more than it needs (no typing, no json)
    from collections.abc import Mapping

AGENT_ENV = "THE_LOOP_AGENT"
WORK_ITEM_ENV = "THE_LOOP_WORK_ITEM"
TOKEN_ENV = "THE_LOOP_HOOK_TOKEN"
HOOK_DIR_ENV = "THE_LOOP_HOOK_DIR"
SPOOL_ENV = "THE_LOOP_HOOK_SPOOL"
SOCKET_NAME = "daemon.sock"
SPOOL_NAME = "spool"
PERMISSION = "PermissionRequest"
CODEX_NOTIFY = "codex-notify"
CODEX_TURN = "agent-turn-complete"
KIND_HOOK = "hook"
OK, REFUSED, CLOSED, DECISION, ACK = "ok", "refused", "closed", "decision", "ack"
"""The daemon's replies (one line: the word, then its text) and the hook's acknowledgement of
a decision."""
MAX_STDIN = 1 << 20
MAX_REPLY = 1 << 16
ACK_SECONDS = 10.0
RETRY_SECONDS = 0.5
_SHORT_PATH = 100
"""Longer socket paths (AF_UNIX takes about 108 bytes) are reached through the directory's
file descriptor (``/proc/self/fd/N/daemon.sock``)."""
_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:/#@+")
_EVENT_KEY = b'"hook_event_name"'
_PERMISSION = b'"PermissionRequest"'


def main(args: list[str], env: Mapping[str, str] | None = None) -> int:
    """Report the hook whose JSON is on stdin; always returns 0 (the harness goes on)."""
    started = started_at()
    env = os.environ if env is None else env
    if args[:1] == [CODEX_NOTIFY]:
        return codex_notify(args[1:], env, started)
    channel = _channel(env)
    if channel is None:
        return 0
    try:
        data = sys.stdin.buffer.read(MAX_STDIN).strip() or b"{}"
        line = report_line(channel, KIND_HOOK, data, started)
        if asks_permission(data):
            out = await_decision(channel[2], line)
            if out:
                sys.stdout.write(out)
                sys.stdout.flush()
        else:
            send(channel[2], line, env.get(SPOOL_ENV))
    except (OSError, ValueError) as exc:
        print(f"the-loop hook: {exc}", file=sys.stderr)
    return 0


def started_at() -> float:
    """When this process was started, on this host's clock (the kernel's start time of the
    process, to its clock tick): the time the harness spawned the hook, not the later moment
    the interpreter reached ``main`` (on a loaded host that can come after a hook the harness
    spawned later, so the daemon would order their reports wrongly). ``time.time()`` where
    ``/proc`` cannot say."""
    try:
        with open("/proc/self/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        since_boot = int(fields[19]) / os.sysconf("SC_CLK_TCK")  # field 22: starttime
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - since_boot
    except (OSError, ValueError, IndexError, AttributeError):
        return time.time()
    return time.time() - max(age, 0.0)


def codex_notify(args: list[str], env: Mapping[str, str], started: float | None = None) -> int:
    """Codex's ``notify``: ARGS is ``[PROGRAM …] JSON``; report a finished turn (STARTED, when
    Codex started this program: the daemon drops a report overtaken by a later delivery), then
    run PROGRAM (the operator's own notify) with the JSON. Always returns 0."""
    if not args:
        return 0
    channel = _channel(env)
    data = os.fsencode(args[-1]).strip()
    try:
        if channel is not None and CODEX_TURN.encode() in data:
            line = report_line(channel, CODEX_NOTIFY, data, started)
            send(channel[2], line, env.get(SPOOL_ENV))
    except (OSError, ValueError) as exc:
        print(f"the-loop hook: {exc}", file=sys.stderr)
    if len(args) > 1:
        _run_chained(args)
    return 0


def _channel(env: Mapping[str, str]) -> tuple[bytes, bytes, str] | None:
    """The agent, its token and the hook directory from ENV; None when any is missing."""
    agent, token, where = env.get(AGENT_ENV), env.get(TOKEN_ENV), env.get(HOOK_DIR_ENV)
    if not agent or not token or not where:
        return None
    return agent.encode(), token.encode(), where


def report_line(
    channel: tuple[bytes, bytes, str], kind: str, data: bytes, at: float | None = None
) -> bytes:
    """One report line carrying DATA (the harness's JSON, passed on as it came: the daemon
    parses and checks it) under a random report id, which makes a resend (or a spooled copy)
    idempotent, and AT, when the hook started (the report of a hook the harness did not wait
    for may arrive after a later hook's: the daemon orders them by it). ``ValueError`` when
    the agent or token is not plain text, or DATA is not an object."""
    agent, token = channel[0], channel[1]
    if not _SAFE.issuperset(agent) or not _SAFE.issuperset(token):
        raise ValueError("THE_LOOP_AGENT or THE_LOOP_HOOK_TOKEN is not plain")
    if not data.startswith(b"{"):
        raise ValueError("the hook's input is not a JSON object")
    flat = data.replace(b"\r", b" ").replace(b"\n", b" ")  # only whitespace: strings escape them
    report = os.urandom(16).hex().encode()
    stamp = b"" if at is None else b',"at":' + repr(at).encode()
    return (
        b'{"token":"' + token + b'","agent":"' + agent + b'","report":"' + report
        + b'","kind":"' + kind.encode() + b'"' + stamp + b',"data":' + flat + b"}\n"
    )  # fmt: skip


def asks_permission(data: bytes) -> bool:
    """True when DATA names the ``PermissionRequest`` event (without parsing it: a key in
    a string is escaped, so ``"hook_event_name"`` only matches a key)."""
    at = data.find(_EVENT_KEY)
    while at >= 0:
        rest = data[at + len(_EVENT_KEY) :].lstrip()
        if rest.startswith(b":") and rest[1:].lstrip().startswith(_PERMISSION):
            return True
        at = data.find(_EVENT_KEY, at + 1)
    return False


def send(hook_dir: str, line: bytes, own_spool: str | None = None) -> None:
    """Send LINE and wait for its acknowledgement; spool it (to OWN_SPOOL, the agent's own
    spool directory, when given) when the daemon does not listen or the connection drops
    before the acknowledgement (its id keeps it from applying twice)."""
    try:
        sock = connect(hook_dir)
    except OSError:
        spool(hook_dir, line, own_spool)
        return
    try:
        sock.settimeout(ACK_SECONDS)
        sock.sendall(line)
        reply = read_line(sock)
    except OSError:
        reply = None
    finally:
        sock.close()
    if reply is None:
        spool(hook_dir, line, own_spool)
    elif reply[0] == REFUSED:
        print(f"the-loop hook: refused: {reply[1]}", file=sys.stderr)


def await_decision(hook_dir: str, line: bytes) -> str | None:
    """Send the permission request LINE and wait for the decision (reconnecting and sending
    again while the daemon is away); Claude Code's decision JSON, None when the prompt was
    closed without one or the report was refused."""
    while True:
        try:
            sock = connect(hook_dir)
        except OSError:
            time.sleep(RETRY_SECONDS)
            continue
        try:
            sock.sendall(line)
            reply = read_line(sock)
            if reply is not None and reply[0] == DECISION:
                try:  # noqa: SIM105  (contextlib would cost the hook's start-up)
                    sock.sendall(ACK.encode() + b"\n")  # the daemon then closes the prompt
                except OSError:
                    pass
                return reply[1]
        except OSError:
            reply = None
        finally:
            sock.close()
        if reply is not None:
            if reply[0] == REFUSED:
                print(f"the-loop hook: refused: {reply[1]}", file=sys.stderr)
            return None  # closed without a decision, or refused
        time.sleep(RETRY_SECONDS)


def connect(hook_dir: str) -> _socket.socket:
    """A connection to the daemon's socket in HOOK_DIR (``OSError`` when none listens).

    Made with ``_socket``, the C module ``socket`` wraps: ``import socket`` builds its enums
    on import and alone cost more than the rest of the hook (about 11 ms here)."""
    path = os.path.join(hook_dir, SOCKET_NAME)
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        if len(path) < _SHORT_PATH:
            sock.connect(path)
        else:
            fd = os.open(hook_dir, os.O_RDONLY | os.O_DIRECTORY)
            try:
                sock.connect(f"/proc/self/fd/{fd}/{SOCKET_NAME}")
            finally:
                os.close(fd)
    except OSError:
        sock.close()
        raise
    return sock


def read_line(sock: _socket.socket) -> tuple[str, str] | None:
    """The next reply line the daemon sends, as (word, text); None when the connection ends
    before one."""
    data = b""
    while b"\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > MAX_REPLY:
            return None
        data += chunk
    word, _, text = data.split(b"\n", 1)[0].decode("utf-8", "replace").partition(" ")
    return word, text


def spool(hook_dir: str, line: bytes, own_spool: str | None = None) -> None:
    """Write LINE to ``<OWN_SPOOL>/<time>-<random>.json`` (default ``<HOOK_DIR>/spool``;
    temporary file + rename: the daemon never reads half a report)."""
    where = own_spool or os.path.join(hook_dir, SPOOL_NAME)
    os.makedirs(where, mode=0o700, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.urandom(4).hex()}"
    temporary = os.path.join(where, f".{name}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)
    os.rename(temporary, os.path.join(where, f"{name}.json"))


def _run_chained(args: list[str]) -> None:
    """Start the operator's notify program (ARGS less the JSON, which it gets last) and leave
    it running: Codex does not wait for its notify program either."""
    # lazy: only a chained notify needs it, and the hook's start-up is measured
    import subprocess

    try:
        subprocess.Popen(args, stdin=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        print(f"the-loop hook: cannot run {args[0]!r}: {exc}", file=sys.stderr)
