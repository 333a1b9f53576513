"""Files the daemon writes into an agent's own home, and reads from the places an agent can
write (its home, its transcripts, its spool): the agent could have left anything there, so the
daemon never writes through a symlink the agent left (a planted link would otherwise make it
overwrite a file of its own choosing, such as the state database), and reads only a regular
file, never through a final symlink (which would show the daemon's own files, such as its API
token, as the agent's transcript) nor from a FIFO or a device (an ``open`` that never returns
would hang the thread reading it: the hook channel, the usage meter, a page)."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


def open_agent_file(path: str | Path) -> BinaryIO:
    """PATH, a file an agent can write, open for reading (binary); ``OSError`` when it is a
    symlink, or anything but a regular file."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def write_in_home(home: Path, relative: str, data: str | bytes) -> Path:
    """Write DATA to HOME/RELATIVE (0600, replaced atomically): a symlink or a file the agent left
    where a folder of RELATIVE goes is removed, not followed; the staging file is created
    exclusively, never opened through a link. The path written."""
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    at = home
    for part in Path(relative).parent.parts:
        at = at / part
        if at.is_symlink() or (at.exists() and not at.is_dir()):
            at.unlink()
        at.mkdir(exist_ok=True, mode=0o700)
    staged = at / f".{Path(relative).name}.{os.getpid()}.the-loop"
    staged.unlink(missing_ok=True)
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    target = at / Path(relative).name
    os.replace(staged, target)
    return target
