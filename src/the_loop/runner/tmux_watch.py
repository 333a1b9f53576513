"""Which panes printed: tmux tells, nobody polls (decision 0059).

Each watched pane's output is piped by the tmux server (``pipe-pane -O``) into ``cat``, which
writes it to a FIFO private to this process (``<work dir>/watch/<digest of the target>``); this
process holds each FIFO's read end, and one thread waits on all of them (``epoll``). Output on
a pane wakes that thread, which drains the bytes, notes the time and calls ``on_change``; a
pane that prints nothing costs nothing to anyone. ``take`` hands the panes that printed since
the last ``take``, with the time of their last output.

A pipe that closes (the pane died, ``cat`` was killed, another ``pipe-pane`` replaced ours)
is reported as printed and forgotten, so the next ``watch`` arms it again. Arming replaces any
pipe the pane had (a previous daemon's), and many panes are armed in one tmux invocation.
Never raises: a pane that could not be armed is simply not reported as armed, and the caller
reads it as before.

A pane whose program exits is kept by ``remain-on-exit`` and its pipe stays open, so arming
also sets the window's ``pane-died`` hook: a shell, run only then, writes the session's name
into this process's ``died`` FIFO (held open read-write, so it never reads as closed), and
``on_died`` is called (the daemon's reconciler looks at once instead of on its slow beat);
so it is when a pipe closes.
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
from collections.abc import Callable, Sequence
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
)

if TYPE_CHECKING:
    from the_loop.runner.tmux import TmuxRunner

CHUNK = 65536


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
    _died: int | None = None

    def watch(self, targets: Sequence[str]) -> set[str]:
        """Watch exactly TARGETS: arm those not armed yet, forget the others. Returns the
        targets armed by this call (their earlier output was not seen: read them once)."""
        wanted = set(targets)
        with self._lock:
            gone = [t for t in self._pipes if t not in wanted]
            for target in gone:
                self._drop(target)
            new = [t for t in dict.fromkeys(targets) if t not in self._pipes]
        if not new or not self._start():
            return set()
        opened = {t: p for t in new if (p := self._open(t)) is not None}
        armed = self._arm(list(opened), opened)
        with self._lock:
            for target, pipe in opened.items():
                if target not in armed:
                    _close(pipe)
                    continue
                self._pipes[target] = pipe
                self._by_fd[pipe.fd] = target
                if self._poll is not None:
                    self._poll.register(pipe.fd, select.EPOLLIN | select.EPOLLHUP)
        return armed

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
        """Stop watching: close every FIFO (each ``cat`` ends at its next write)."""
        with self._lock:
            self._closed = True
            for target in list(self._pipes):
                self._drop(target)
            poll, self._poll = self._poll, None
            died, self._died = self._died, None
        if poll is not None:
            poll.close()
        if died is not None:
            _close(_Pipe(died, self.directory / DIED))

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
                self._died = _open_died(self.directory / DIED)
                if self._died is not None:
                    self._poll.register(self._died, select.EPOLLIN)
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

    def _arm(self, targets: list[str], pipes: dict[str, _Pipe]) -> set[str]:
        """``pipe-pane -O`` of each of TARGETS into its FIFO, batched; the targets armed."""
        armed: set[str] = set()
        pending = list(targets)
        while pending:
            args: list[str] = []
            batch: list[str] = []
            for target in pending:
                part = self._arm_args(target, pipes[target].path)
                if batch and command_size(args) + command_size(part) + 2 > COMMAND_BUDGET:
                    break
                args += [";", *part] if args else part
                batch.append(target)
            result = self.ask(*args)
            if result.ok:
                armed.update(batch)
                pending = pending[len(batch) :]
                continue
            # tmux stops at the first failing command: arm each of this batch alone
            for target in batch:
                part = self._arm_args(target, pipes[target].path)
                if self.ask(*part).ok:
                    armed.add(target)
            pending = pending[len(batch) :]
        return armed

    def _arm_args(self, target: str, fifo: Path) -> list[str]:
        args = _pipe_args(target, fifo)
        if self._died is not None:
            args += [";", *_died_hook(target, self.directory / DIED)]
        return args

    def _drop(self, target: str) -> None:
        """Forget TARGET (the lock is held)."""
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
                    if fd == self._died:
                        _drain(fd)  # which session does not matter: the reconciler looks
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
    return ["pipe-pane", "-O", "-t", f"={target}:", f"exec cat >{shlex.quote(str(fifo))}"]


DIED = "died"
"""The FIFO the panes' ``pane-died`` hooks write to."""


def _open_died(path: Path) -> int | None:
    """The ``died`` FIFO, open read-write (it never reads as closed while we hold it)."""
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.mkfifo(path, 0o600)
        return os.open(path, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def _died_hook(target: str, fifo: Path) -> list[str]:
    """The ``pane-died`` hook of TARGET's window: one line into FIFO, if it is still there
    (opened read-write: never blocks, whoever reads it or not)."""
    quoted = shlex.quote(str(fifo))
    shell = f"test -p {quoted} && echo {shlex.quote(target)} 1<>{quoted}"
    command = f"run-shell -b {_tmux_quote(shell)}"
    return ["set-hook", "-w", "-t", f"={target}:", "pane-died", command]


def _tmux_quote(text: str) -> str:
    """TEXT as one double-quoted argument of a tmux command line (a hook's command is parsed
    again when it runs; ``run-shell`` expands formats, so ``#`` is doubled)."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$")
    return '"' + escaped.replace("#", "##") + '"'


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
    with contextlib.suppress(OSError):
        os.close(pipe.fd)
    with contextlib.suppress(OSError):
        pipe.path.unlink()


def pane_watch(
    runner: TmuxRunner, on_change: Callable[[], None], on_died: Callable[[], None] = lambda: None
) -> PaneWatch:
    """A watch of RUNNER's server, its FIFOs under RUNNER's work dir (one dir per process)."""
    return PaneWatch(runner.run, runner.work_dir / f"watch-{os.getpid()}", on_change, on_died)


def probe_many(runner: TmuxRunner, targets: Sequence[str]) -> dict[str, Probe] | None:
    """``probe`` of each of TARGETS from one ``list-panes -a`` (not one tmux client per
    target); None when tmux did not answer. Never raises."""
    result = runner.ask("list-panes", "-a", "-F", PANE_FORMAT)
    if result.not_found:
        return dict.fromkeys(targets, Probe.ABSENT)
    if not result.ok:
        return None
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
