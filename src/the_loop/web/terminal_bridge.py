"""The browser terminal's bridge: a tmux client in a pseudo-terminal, for one viewer.

``session_plan`` / ``standing_plan`` decide what a viewer may attach to (blocking: the database
and tmux; run them in a thread): only a tmux target whose ownership mark is the one the-loop set
at spawn, read-only when the viewer is, when the session is closed or not running, or when the
pane is dead but kept (then shown from its last screen: no client attaches to a dead pane,
decision 0087). ``Bridge`` runs ``tmux attach-session`` on a new pty (argv only, its
own session and process group) and moves bytes between the pty's master and the caller without
blocking the event loop: output through ``loop.add_reader``, input written non-blocking with
``add_writer`` for what did not fit. ``close`` kills the client's process group, reaps it and
closes the fd. See decision 0022.

Sizes (decision 0042): a writable viewer's pty is the viewer's size, and the agent's window
follows it (the tmux hooks set at spawn); a read-only viewer (``-r -f ignore-size``) never
changes the window: its pty is kept at the window's own size (``Plan.window_view``, asked again
by the caller while it watches) and the page scales what it shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
import tty
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from the_loop.agent import Agent, panes
from the_loop.cluster import placement
from the_loop.context import Ctx
from the_loop.errors import BadInput
from the_loop.standing import defs as standing_defs
from the_loop.standing import node as standing_node
from the_loop.standing.defs import ViewStatus
from the_loop.standing.service import agent_of as standing_agent
from the_loop.views import sessions as views
from the_loop.work_items import service as sessions

DEFAULT_COLS = 80
DEFAULT_ROWS = 24
MAX_COLS = 1000
MAX_ROWS = 500
READ_CHUNK = 65536
MAX_PENDING_OUTPUT = 64
"""Output chunks queued for a slow viewer before the pty is no longer read (back-pressure)."""
MAX_PENDING_INPUT = 1 << 20
"""Input bytes waiting for the pty beyond which more input is dropped."""
TERM = "xterm-256color"
FOCUS_IN, FOCUS_OUT = b"\x1b[I", b"\x1b[O"
"""What a terminal reports when it gains and loses focus. A viewer's client says once, when it
has attached, that it lost focus, and never regains it: a pane some focused client shows is
told when that client leaves, and tmux 3.3a exits when it tells a dead pane whose program had
asked for focus events (decision 0087). An agent does not need to know who looks at it."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What a viewer attaches to: the target, whether read-only, the client to run, and how to
    ask the size of a client showing the target's whole window (None when tmux cannot say)."""

    target: str
    read_only: bool
    argv: tuple[str, ...]
    env: Mapping[str, str]
    window_view: Callable[[], tuple[int, int] | None] = lambda: None
    record: Callable[[], str | None] = lambda: None
    """The pane's last screen once its program has exited, None while it runs: shown instead
    of running the client when the pane is dead (``start``), and when the client ends because
    the pane died (``output``)."""
    dead: bool = False


def session_plan(ctx: Ctx, ref_or_id: str, viewer_read_only: bool) -> Plan:
    """The plan for work-item session REF_OR_ID: ``NotFound`` when it or its pane is gone,
    ``BadInput`` when headless, ``Refused`` when its target holds something else."""
    rec = sessions.resolve(ctx, ref_or_id)
    if rec.runner != "tmux" or not rec.tmux_target:
        raise BadInput(f"session {rec.id} runs headless: it has no terminal")
    placement.require_here(ctx, rec, placement.command("attach", rec.work_item))
    return _plan(ctx, sessions.agent_of(rec), viewer_read_only or not rec.live)


def standing_plan(ctx: Ctx, name: str, viewer_read_only: bool) -> Plan:
    """The plan for standing session NAME (read-only unless it is running)."""
    view = views.standing_view(ctx, name)
    if view.node is not None:  # a shared database: its agent may run on another node
        standing_node.require_here(ctx, name, standing_node.command("attach", name))
    agent = standing_agent(standing_defs.definition(ctx, name), None)
    return _plan(ctx, agent, viewer_read_only or view.status is not ViewStatus.running)


def _plan(ctx: Ctx, agent: Agent, read_only: bool) -> Plan:
    term = panes.terminal(ctx, agent, read_only)
    env = dict(term.command.env)
    env["TERM"] = TERM
    if not any("UTF-8" in env.get(k, "").upper() for k in ("LC_ALL", "LC_CTYPE", "LANG")):
        env["LC_CTYPE"] = "C.UTF-8"
    return Plan(
        term.target,
        term.read_only,
        term.command.argv,
        env,
        term.window_view,
        term.record,
        term.dead,
    )


def clamp_size(cols: object, rows: object) -> tuple[int, int] | None:
    """COLS x ROWS as a pty size within bounds, or None when either is not a positive int."""
    if type(cols) is not int or type(rows) is not int or cols < 1 or rows < 1:
        return None
    return min(max(cols, 2), MAX_COLS), min(max(rows, 2), MAX_ROWS)


def _drawn(screen: str) -> bytes:
    """SCREEN (a pane's rows, ``\\n``-separated) drawn from the top of a cleared terminal, the
    cursor hidden: a dead pane's record, shown without a tmux client."""
    rows = "\r\n".join(screen.split("\n"))
    return f"\x1b[?25l\x1b[H\x1b[2J{rows}".encode()


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


class Bridge:
    """One tmux client on one pty. ``start`` it on the event loop; ``output()`` yields what it
    prints (None once it ended); ``write`` and ``resize`` never block; ``close`` ends it."""

    _live: set[Bridge] = set()
    _live_lock = threading.Lock()

    def __init__(self, plan: Plan, cols: int = DEFAULT_COLS, rows: int = DEFAULT_ROWS) -> None:
        self.plan = plan
        self._size = (cols, rows)
        self._master = -1
        self.proc: subprocess.Popen[bytes] | None = None
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.printed = asyncio.Event()
        """Set whenever the client prints (a window that changes size redraws its clients)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._reading = False
        self._ended = False
        self._pending = bytearray()
        self._unfocused = False
        self._shown_end = False
        self.shows_record = False
        """Set once what the client is sent is the agent's kept last screen (``_recorded``):
        the agent has ended, and nothing typed reaches anything."""
        self._closed = False
        self._state_lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    async def start(self) -> None:
        """Spawn the client on a new pty (in a thread: fork and exec take a moment) and start
        reading its output on the running loop. For a dead pane (``Plan.dead``) no client
        runs: its last screen is the one output (``_recorded``)."""
        self._loop = asyncio.get_running_loop()
        if self.plan.dead:
            self._queue.put_nowait(await self._recorded() or _drawn(""))
            self.shows_record = True
            return
        await asyncio.to_thread(self._spawn)
        self._resume_reading()

    async def _recorded(self) -> bytes | None:
        """The pane's last screen, drawn (``_drawn``); None while the pane is not dead."""
        shown = await asyncio.to_thread(self.plan.record)
        return None if shown is None else _drawn(shown)

    def _spawn(self) -> None:
        with self._state_lock:  # against a close() racing a start cancelled half-way
            if self._closed:
                return
            self._master = self._open_pty()
            with Bridge._live_lock:
                Bridge._live.add(self)

    def _open_pty(self) -> int:
        master, slave = pty.openpty()
        try:
            _set_size(slave, *self._size)
            # raw from the start: keys typed before the client took the terminal must not be
            # cooked by the line discipline (CR turned into LF, echoed back)
            tty.setraw(slave)
            self.proc = subprocess.Popen(
                list(self.plan.argv), stdin=slave, stdout=slave, stderr=slave,
                env=dict(self.plan.env), start_new_session=True, close_fds=True,
            )  # fmt: skip
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return master

    # -- output ------------------------------------------------------------------------------

    def _resume_reading(self) -> None:
        if self._master < 0 or self._closed:
            return
        if not self._reading and not self._ended and self._loop is not None:
            self._loop.add_reader(self._master, self._on_readable)
            self._reading = True

    def _pause_reading(self) -> None:
        if self._reading and self._loop is not None:
            self._loop.remove_reader(self._master)
            self._reading = False

    def _on_readable(self) -> None:
        try:
            data = os.read(self._master, READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:  # EIO: the client closed its side (it exited)
            data = b""
        if not data:
            self._ended = True
            self._pause_reading()
            self._queue.put_nowait(None)
            return
        if not self._unfocused:  # attached (it draws): say the viewer's terminal lost focus
            self._unfocused = True
            with contextlib.suppress(OSError):
                os.write(self._master, FOCUS_OUT)
        self._queue.put_nowait(data)
        self.printed.set()
        if self._queue.qsize() >= MAX_PENDING_OUTPUT:
            self._pause_reading()

    async def output(self) -> bytes | None:
        """The next output (everything queued, joined), or None once the client has ended. A
        client that ended because the agent's pane died (the pane's death hook detaches its
        clients, decision 0088) is followed by the pane's last screen, once, and the viewer
        watches that from then on, as one who came after."""
        first = await self._queue.get()
        if first is None:
            if self._shown_end:
                return None
            self._shown_end = True
            shown = await self._recorded()
            self.shows_record = shown is not None
            return shown
        parts = [first]
        while not self._queue.empty():
            more = self._queue.get_nowait()
            if more is None:
                self._queue.put_nowait(None)
                break
            parts.append(more)
        self._resume_reading()
        return b"".join(parts)

    # -- input -------------------------------------------------------------------------------

    def write(self, data: bytes) -> None:
        """Send DATA to the client as typed keys (dropped when read-only or closed; a focus-in
        report dropped too: the client stays unfocused, see ``FOCUS_OUT``)."""
        data = data.replace(FOCUS_IN, b"")
        if self.plan.read_only or self._closed or self._master < 0 or not data:
            return
        if self._pending:
            if len(self._pending) + len(data) <= MAX_PENDING_INPUT:
                self._pending += data
            return
        try:
            done = os.write(self._master, data)
        except BlockingIOError:
            done = 0
        except OSError:
            return
        if done < len(data):
            self._pending += data[done:]
            if self._loop is not None:
                self._loop.add_writer(self._master, self._flush)

    def _flush(self) -> None:
        try:
            done = os.write(self._master, bytes(self._pending))
        except BlockingIOError:
            return
        except OSError:
            done = len(self._pending)
        del self._pending[:done]
        if not self._pending and self._loop is not None:
            self._loop.remove_writer(self._master)

    @property
    def size(self) -> tuple[int, int]:
        """The pty's (columns, rows)."""
        return self._size

    def resize(self, cols: int, rows: int) -> None:
        """This viewer's pty size. A writable client's window follows it (tmux hooks); a
        read-only client's never does."""
        if self._closed or self._master < 0 or self.proc is None:
            return
        self._size = (cols, rows)
        _set_size(self._master, cols, rows)
        # The client has no controlling terminal (it was not made one), so tell it directly.
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.proc.pid, signal.SIGWINCH)

    # -- the end -----------------------------------------------------------------------------

    def close(self, grace: float = 1.0) -> None:
        """Kill the client's process group, reap it and close the pty. Idempotent; may block
        up to GRACE seconds (call from a thread when on the event loop, or ``aclose``)."""
        with self._state_lock:
            self._close(grace)

    def _close(self, grace: float) -> None:
        if self._closed:
            return
        self._closed = True
        if self._loop is not None and self._master >= 0 and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError, ValueError, OSError):  # a closing loop
                self._loop.remove_reader(self._master)
                self._loop.remove_writer(self._master)
        proc = self.proc
        if proc is not None:
            _kill_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                _kill_group(proc, signal.SIGKILL)
                proc.wait()
        if self._master >= 0:
            os.close(self._master)
            self._master = -1
        with Bridge._live_lock:
            Bridge._live.discard(self)

    async def aclose(self) -> None:
        """``close`` without blocking the event loop."""
        if self._loop is not None and self._master >= 0:
            self._loop.remove_reader(self._master)
            self._loop.remove_writer(self._master)
        self._loop = None
        await asyncio.to_thread(self.close)

    @classmethod
    async def close_all(cls) -> int:
        """Close every bridge still open in this process (the daemon is shutting down)."""
        with cls._live_lock:
            live = list(cls._live)
        for bridge in live:
            await bridge.aclose()
        return len(live)


def _kill_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if proc.pid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)
