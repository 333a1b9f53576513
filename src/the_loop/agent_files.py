"""Files in the places an agent can write: its own home when it is confined (where the-loop
prepares its harness's settings, its logins, its git configuration and a restored transcript),
its transcripts, its spool.

The agent could have left anything there. So the daemon never goes through a symlink the agent
left there (a planted link would otherwise make it read a file of its own choosing into the
agent's settings, such as its configuration, or write one, such as the state database), a link
or a file where a folder goes is replaced by a folder, and only a regular file is read, never a
FIFO or a device (an ``open`` that never returns would hang the thread reading it: a spawn, the
hook channel, the usage meter, a page). A lock the agent holds does not hold the daemon up.

The same code serves the operator's own harness folders (an agent that is not confined uses
them): there links are followed as any program of theirs would (their dotfiles may be links).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

__all__ = ["Folder", "open_agent_file", "write_in_home"]

_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_LINKED = (errno.ELOOP, errno.ENOTDIR)
LOCK_WAIT = 5.0
"""Seconds the daemon waits for a lock file in an agent's home before it gives up."""


def open_agent_file(path: str | Path, within: str | Path | None = None) -> BinaryIO:
    """PATH, a file an agent can write, open for reading (binary); ``OSError`` when it is a
    symlink, or anything but a regular file, or (WITHIN given: the agent's own folder) when
    the file opened is not inside WITHIN — a folder on the way to it was a link out of it."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = _regular(os.open(path, flags))
    if within is not None:
        opened = os.readlink(f"/proc/self/fd/{fd}")
        top = os.path.realpath(within).rstrip(os.sep) + os.sep
        if not opened.startswith(top):
            os.close(fd)
            raise OSError(errno.EACCES, "not inside the agent's own folder", str(path))
    return os.fdopen(fd, "rb")


def _regular(fd: int) -> int:
    """FD, in blocking mode, when it is a regular file; else closed, and ``OSError``."""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def write_in_home(home: Path, relative: str | Path, data: str | bytes) -> Path:
    """Write DATA to HOME/RELATIVE, in an agent's own HOME (0600, replaced atomically). The
    path written."""
    with Folder(home, agents=True) as folder:
        folder.replace(relative, data)
    return home / relative


class Folder:
    """A folder the daemon reads and writes files in, held open: an agent's (AGENTS true: its
    own home), where nothing is followed or trusted, or the operator's. Made, with its
    parents, when missing. Paths given to the methods are relative to it."""

    def __init__(self, path: Path, *, agents: bool) -> None:
        self.path = path
        self.agents = agents
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        parent = os.open(path.parent, _FOLDER)
        try:
            self.fd = self._folder(parent, path.name, create=True)
        finally:
            os.close(parent)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Folder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def _nofollow(self) -> int:
        return os.O_NOFOLLOW | os.O_NONBLOCK if self.agents else 0

    def _folder(self, at: int, name: str, *, create: bool) -> int:
        """The folder NAME in the folder AT, opened; made when missing and CREATE (in an
        agent's folder a link or a file there is replaced by it). ``FileNotFoundError``
        when it is missing (or is not a folder) and not CREATE."""
        flags = _FOLDER | (os.O_NOFOLLOW if self.agents else 0)
        try:
            return os.open(name, flags, dir_fd=at)
        except FileNotFoundError:
            if not create:
                raise
        except OSError as exc:
            if not self.agents or exc.errno not in _LINKED:
                raise
            if not create:
                raise FileNotFoundError(errno.ENOENT, "not a folder", name) from None
            os.unlink(name, dir_fd=at)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=at)
        return os.open(name, flags, dir_fd=at)

    @contextlib.contextmanager
    def _at(self, relative: str | Path, *, create: bool) -> Iterator[tuple[int, str]]:
        """The folder holding RELATIVE (opened, made when CREATE) and RELATIVE's name."""
        parts = Path(relative).parts
        if not parts or Path(relative).is_absolute() or ".." in parts:
            raise ValueError(f"not a path inside the folder: {relative}")
        fd = os.dup(self.fd)
        try:
            for part in parts[:-1]:
                inner = self._folder(fd, part, create=create)
                os.close(fd)
                fd = inner
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def _clear(self, at: int, name: str) -> None:
        """In an agent's folder: what is at NAME removed unless it is a regular file."""
        if not self.agents:
            return
        try:
            found = os.stat(name, dir_fd=at, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISREG(found.st_mode):
            if stat.S_ISDIR(found.st_mode):
                raise IsADirectoryError(errno.EISDIR, "a folder is in the way", name)
            os.unlink(name, dir_fd=at)

    def read(self, relative: str | Path) -> bytes | None:
        """The bytes of the file at RELATIVE; None when there is none (in an agent's folder,
        a link or anything but a regular file there counts as none)."""
        try:
            with self._at(relative, create=False) as (at, name):
                flags = os.O_RDONLY | os.O_NOCTTY | os.O_CLOEXEC | self._nofollow
                fd = os.open(name, flags, dir_fd=at)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if self.agents and exc.errno in _LINKED:
                return None
            raise
        try:
            fd = _regular(fd)
        except OSError:
            if self.agents:
                return None
            raise
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def replace(self, relative: str | Path, data: str | bytes) -> None:
        """Write DATA to RELATIVE whole or not at all (a staged file renamed over it, synced);
        a file there keeps its mode, a new one is 0600."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        with self._at(relative, create=True) as (at, name):
            try:
                found = os.stat(name, dir_fd=at, follow_symlinks=not self.agents)
            except FileNotFoundError:
                found = None
            regular = found is not None and stat.S_ISREG(found.st_mode)
            mode = found.st_mode & 0o777 if found is not None and regular else 0o600
            staged = f".{name}.{os.getpid()}.{time.monotonic_ns()}.the-loop"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(staged, flags, 0o600, dir_fd=at)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(raw)
                    handle.flush()
                    os.fchmod(handle.fileno(), mode)
                    os.fsync(handle.fileno())
                os.replace(staged, name, src_dir_fd=at, dst_dir_fd=at)
            except BaseException:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(staged, dir_fd=at)
                raise

    def append(self, relative: str | Path, data: str) -> None:
        """Add DATA at the end of the file at RELATIVE (made, 0600, when missing), synced."""
        with self._at(relative, create=True) as (at, name):
            self._clear(at, name)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC | self._nofollow
            fd = _regular(os.open(name, flags, 0o600, dir_fd=at))
            with os.fdopen(fd, "ab") as handle:
                handle.write(data.encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())

    @contextlib.contextmanager
    def locked(self, relative: str | Path) -> Iterator[None]:
        """Hold the lock file at RELATIVE (made when missing) for the block: between the-loop's
        own writers. In an agent's folder, ``BlockingIOError`` when the agent has held it for
        ``LOCK_WAIT`` seconds."""
        with self._at(relative, create=True) as (at, name):
            self._clear(at, name)
            flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | self._nofollow
            fd = _regular(os.open(name, flags, 0o600, dir_fd=at))
        try:
            self._lock(fd)
            yield
        finally:
            os.close(fd)

    def _lock(self, fd: int) -> None:
        if not self.agents:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
