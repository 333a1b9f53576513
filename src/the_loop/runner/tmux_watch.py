"""Which panes printed: tmux tells, nobody polls (decision 0059).

Each watched pane's output is piped by the tmux server (``pipe-pane -O``) into ``dd``, which
writes it to a FIFO private to this process (``<work dir>/watch/<digest of the target>``); this
process holds each FIFO's read end, and one thread waits on all of them (``epoll``). Output on
a pane wakes that thread, which drains the bytes, notes the time and calls ``on_change``; a
pane that prints nothing costs nothing to anyone. ``take`` hands the panes that printed since
the last ``take``, with the time of their last output.

An agent whose output nobody reads (read through its hooks) is watched for its end alone:
``watch(targets, ends)`` waits on the program of each of ENDS once per start, with no pipe.

A pipe that closes (the pane died, ``dd`` was killed, another ``pipe-pane`` replaced ours)
is reported as printed and forgotten, so the next ``watch`` arms it again. Arming replaces any
pipe the pane had (a previous daemon's), and many panes are armed in one tmux invocation.
Never raises: a pane that could not be armed is simply not reported as armed, and the caller
reads it as before.

A pane whose program exits is kept by ``remain-on-exit`` and its pipe stays open, so arming
also asks the pane's pid (in the same tmux invocation) and waits on a pidfd of it in the same
``epoll``: the kernel says when that process ends, and ``on_died`` is called (the daemon's
reconciler looks at once instead of on its slow beat); so it is when a pipe closes. (tmux's
own ``pane-died`` hook was tried first: it runs only once tmux has seen the program end,
which Debian's tmux 3.3a misses about one time in seven until something wakes its reaper,
``tmux_core.wake_reaper``, decision 0088.)
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import shlex
import stat
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.runner.base import process_identity
from the_loop.runner.outcomes import Probe
from the_loop.runner.tmux_core import (
    COMMAND_BUDGET,
    PANE_FORMAT,
    TmuxResult,
    command_size,
    parse_panes,
    wake_reaper,
)

if TYPE_CHECKING:
    from the_loop.runner.tmux import TmuxRunner

CHUNK = 65536
_UNSET = object()


@dataclass
class _Pipe:
    fd: int
    path: Path


@dataclass
class PaneWatch:
    """The panes of a tmux server this process is told about (see the module docstring).

    ASK runs one tmux command line (``TmuxRunner.run``); DIRECTORY is private to this process
    (created 0700); ON_CHANGE is called from the watch thread when a pane printed."""

    ask: Callable[..., TmuxResult]
    directory: Path
    on_change: Callable[[], None] = lambda: None
    on_died: Callable[[], None] = lambda: None
    _pipes: dict[str, _Pipe] = field(default_factory=dict)
    _by_fd: dict[int, str] = field(default_factory=dict)
    _printed: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _poll: select.epoll | None = None
    _thread: threading.Thread | None = None
    _closed: bool = False
    _pidfds: dict[str, int] = field(default_factory=dict)
    _by_pidfd: dict[int, str] = field(default_factory=dict)
    _ends: dict[str, object] = field(default_factory=dict)
    """The targets whose program's end alone is watched → the start it was armed for."""

    def watch(self, targets: Sequence[str], ends: Mapping[str, object] | None = None) -> set[str]:
        """Watch exactly TARGETS (their output and their program's end) and, of ENDS (target →
        a token that changes when a new program starts there, such as its start time), only
        their program's end (``on_died``: an agent read through hooks prints unwatched); arm
        those not armed yet, forget the others. Returns the targets of TARGETS armed by this
        call (their earlier output was not seen: read them once)."""
        wanted = set(targets)
        only = {t: start for t, start in (ends or {}).items() if t not in wanted}
        with self._lock:
            gone = [t for t in self._pipes if t not in wanted]
            for target in gone:
                self._drop(target)
            for target, start in list(self._ends.items()):
                if only.get(target, _UNSET) != start:
                    self._forget_exit(target)
                    del self._ends[target]
            fresh = {t: start for t, start in only.items() if t not in self._ends}
            new = [t for t in dict.fromkeys(targets) if t not in self._pipes]
        if fresh and self._start():
            self._await_ends(fresh)
        if not new or not self._start():
            return set()
        opened = {t: p for t in new if (p := self._open(t)) is not None}
        armed = self._arm(list(opened), opened)
        ended = False
        with self._lock:
            for target, pipe in opened.items():
                if target not in armed:
                    _close(pipe)
                    continue
                self._pipes[target] = pipe
                self._by_fd[pipe.fd] = target
                self._forget_exit(target)  # watched for its end alone until now
                if self._poll is not None:
                    self._poll.register(pipe.fd, select.EPOLLIN | select.EPOLLHUP)
                    ended = not self._await_exit(target, armed[target]) or ended
        if ended:
            self.on_died()  # its program ended before it was armed
        return set(armed)

    def _await_ends(self, fresh: Mapping[str, object]) -> None:
        """Wait on the programs of FRESH (target → its start; one ``list-panes -a``): each is
        remembered for that start, so a program that already ended is told once."""
        listed = self.ask("list-panes", "-a", "-F", PANE_FORMAT)
        if not listed.ok and not listed.not_found:
            return  # asked again at the next watch
        pids = {p.session: None if p.dead else p.pid for p in parse_panes(listed.stdout, None)}
        ended = False
        with self._lock:
            if self._closed:
                return
            for target, start in fresh.items():
                self._forget_exit(target)
                self._ends[target] = start
                ended = not self._await_exit(target, pids.get(target)) or ended
        if ended:
            self.on_died()

    def armed(self, target: str) -> bool:
        """Whether TARGET's output reaches this watch."""
        with self._lock:
            return target in self._pipes

    def take(self) -> dict[str, float]:
        """The targets that printed (or whose pipe closed) since the last call → the time
        (``time.time()``) of their last output."""
        with self._lock:
            printed, self._printed = self._printed, {}
        return printed

    def close(self) -> None:
        """Stop watching: close every FIFO (each ``dd`` ends at its next write)."""
        with self._lock:
            self._closed = True
            for target in list(self._pipes):
                self._drop(target)
            for target in list(self._ends):
                self._forget_exit(target)
            self._ends.clear()
            poll, self._poll = self._poll, None
        if poll is not None:
            poll.close()
        with contextlib.suppress(OSError):
            self.directory.rmdir()  # its FIFOs are gone; a directory left in use stays

    # -- inside ----------------------------------------------------------------------------

    def _start(self) -> bool:
        with self._lock:
            if self._closed:
                return False
            if self._poll is None:
                try:
                    self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                    self._poll = select.epoll()
                except OSError:
                    return False
                self._thread = threading.Thread(
                    target=self._run, args=(self._poll,), name="tmux-watch", daemon=True
                )
                self._thread.start()
            return True

    def _open(self, target: str) -> _Pipe | None:
        name = hashlib.blake2b(target.encode(), digest_size=10).hexdigest()
        path = self.directory / name
        try:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            os.mkfifo(path, 0o600)
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            return None
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            os.close(fd)
            return None
        return _Pipe(fd, path)

    def _arm(self, targets: list[str], pipes: dict[str, _Pipe]) -> dict[str, int | None]:
        """``pipe-pane -O`` of each of TARGETS into its FIFO, batched: the targets armed → the
        pid of their pane's program (None when it has ended)."""
        armed: dict[str, int | None] = {}
        pending = list(targets)
        while pending:
            args: list[str] = []
            batch: list[str] = []
            for target in pending:
                part = _arm_args(target, pipes[target].path)
                if batch and command_size(args) + command_size(part) + 2 > COMMAND_BUDGET:
                    break
                args += [";", *part] if args else part
                batch.append(target)
            result = self.ask(*args)
            if result.ok:
                armed.update(zip(batch, _pids(result.stdout, len(batch)), strict=True))
                pending = pending[len(batch) :]
                continue
            # tmux stops at the first failing command: arm each of this batch alone
            for target in batch:
                alone = self.ask(*_arm_args(target, pipes[target].path))
                if alone.ok:
                    armed[target] = _pids(alone.stdout, 1)[0]
            pending = pending[len(batch) :]
        return armed

    def _await_exit(self, target: str, pid: int | None) -> bool:
        """Be told when TARGET's program PID ends (the lock is held); False when it has."""
        if pid is None or self._poll is None:
            return pid is not None
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            return False
        except OSError:
            return True  # no pidfd here: the reconciler's beat finds it
        self._pidfds[target] = fd
        self._by_pidfd[fd] = target
        self._poll.register(fd, select.EPOLLIN)
        return True

    def _forget_exit(self, target: str) -> None:
        """Stop waiting on TARGET's program (the lock is held)."""
        fd = self._pidfds.pop(target, None)
        if fd is None:
            return
        self._by_pidfd.pop(fd, None)
        if self._poll is not None:
            with contextlib.suppress(OSError, ValueError):
                self._poll.unregister(fd)
        with contextlib.suppress(OSError):
            os.close(fd)

    def _drop(self, target: str) -> None:
        """Forget TARGET (the lock is held)."""
        self._forget_exit(target)
        pipe = self._pipes.pop(target, None)
        if pipe is None:
            return
        self._by_fd.pop(pipe.fd, None)
        if self._poll is not None:
            with contextlib.suppress(OSError, ValueError):
                self._poll.unregister(pipe.fd)
        _close(pipe)

    def _run(self, poll: select.epoll) -> None:
        while True:
            try:
                events = poll.poll()
            except (OSError, ValueError):
                return  # closed
            if not events:
                continue
            now = time.time()
            died = False
            with self._lock:
                for fd, _mask in events:
                    ended = self._by_pidfd.get(fd)
                    if ended is not None:
                        self._forget_exit(ended)  # the reconciler looks; the pipe stays
                        died = True
                        continue
                    target = self._by_fd.get(fd)
                    if target is None:
                        continue
                    if not _drain(fd):
                        self._drop(target)  # the pipe closed: armed again by the next watch
                        died = True  # the pane may be gone
                    self._printed[target] = now
            if died:
                self.on_died()
            if len(events) > int(died):
                self.on_change()


def _pipe_args(target: str, fifo: Path) -> list[str]:
    """``pipe-pane -O`` of TARGET's output into FIFO (replacing any pipe the pane had)."""
    return ["pipe-pane", "-O", "-t", f"={target}:", pipe_command(fifo)]


def pipe_command(fifo: Path) -> str:
    """The shell command tmux runs for a watched pane: copy its output into FIFO, opened
    without creating it (``dd conv=nocreat``). tmux starts the command on its own time: when
    the watch dropped the pane and removed its FIFO first, the command ends at once, where a
    shell's ``>FIFO`` would create a regular file there and fill it with the pane's output for
    as long as the pane lives."""
    return f"exec dd {shlex.quote(f'of={fifo}')} conv=nocreat bs=64K status=none"


def _arm_args(target: str, fifo: Path) -> list[str]:
    """Arm TARGET: pipe its output into FIFO, then print its program's pid and whether the
    pane is dead."""
    ask = ["display-message", "-p", "-t", f"={target}:", "#{pane_pid} #{pane_dead}"]
    return [*_pipe_args(target, fifo), ";", *ask]


def _pids(output: str, count: int) -> list[int | None]:
    """COUNT pids from the ``display-message`` lines of arming (None: dead or unreadable)."""
    found: list[int | None] = []
    for line in output.splitlines()[:count]:
        pid, _, dead = line.partition(" ")
        found.append(int(pid) if pid.isdigit() and dead == "0" else None)
    return found + [None] * (count - len(found))


def _drain(fd: int) -> bool:
    """Read what FD holds; False when its writer is gone (end of file) or it failed."""
    while True:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        except OSError:
            return False
        if not data:
            return False
        if len(data) < CHUNK:
            return True


def _close(pipe: _Pipe) -> None:
    """Remove PIPE's FIFO, then close its read end: a pipe command that opens it later finds
    nothing to open (``pipe_command``); one that opened it meanwhile ends on its next write."""
    with contextlib.suppress(OSError):
        pipe.path.unlink()
    with contextlib.suppress(OSError):
        os.close(pipe.fd)


def pane_watch(
    runner: TmuxRunner, on_change: Callable[[], None], on_died: Callable[[], None] = lambda: None
) -> PaneWatch:
    """A watch of RUNNER's server, its FIFOs under RUNNER's work dir (one dir per process);
    what a process that ended without closing its watch left there is released first
    (``release_left_behind``)."""
    release_left_behind(runner.work_dir)
    return PaneWatch(runner.run, runner.work_dir / f"watch-{os.getpid()}", on_change, on_died)


def release_left_behind(work_dir: Path) -> int:
    """Remove the watch dirs under WORK_DIR of processes that no longer exist (a daemon killed
    with SIGKILL closes no FIFO); how many FIFOs were released. A ``dd`` that tmux started for
    one after its reader died waits in ``open`` for a reader that never comes, and a
    ``pipe-pane`` replacing it does not wake it: each FIFO is opened for reading once, so such
    a ``dd`` opens it and ends at its first write (no reader) or at the end of its input (its
    pane re-armed), and the FIFO is removed. Never raises."""
    released = 0
    with contextlib.suppress(OSError):
        for found in work_dir.glob("watch-*"):
            pid = found.name.removeprefix("watch-")
            if not pid.isdigit() or int(pid) == os.getpid() or process_identity(int(pid)):
                continue
            for fifo in found.iterdir():
                with contextlib.suppress(OSError):
                    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
                    os.close(fd)
                    released += 1
                with contextlib.suppress(OSError):
                    fifo.unlink()
            with contextlib.suppress(OSError):
                found.rmdir()
    return released


def probe_many(runner: TmuxRunner, targets: Sequence[str]) -> dict[str, Probe] | None:
    """``probe`` of each of TARGETS from one ``list-panes -a`` (not one tmux client per
    target); None when tmux did not answer. Never raises."""
    result = runner.ask("list-panes", "-a", "-F", PANE_FORMAT)
    if result.not_found:
        return dict.fromkeys(targets, Probe.ABSENT)
    if not result.ok:
        return None
    wake_reaper(parse_panes(result.stdout, None))
    lines: dict[str, list[str]] = {}
    for line in result.stdout.splitlines():
        lines.setdefault(line.split("\t", 1)[0], []).append(line)
    found: dict[str, Probe] = {}
    for target in targets:
        panes = parse_panes("\n".join(lines.get(target, ())), target)
        if not panes:
            found[target] = Probe.ABSENT
            continue
        live = any(not p.dead and process_identity(p.pid) is not None for p in panes)
        found[target] = Probe.LIVE if live else Probe.DEAD
    return found
