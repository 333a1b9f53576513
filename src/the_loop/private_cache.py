"""Files only this user may read or write under ``$XDG_CACHE_HOME/the-loop`` (else
``~/.cache/the-loop``): the validated-config cache (``the_loop.config_cache``) and the
fast-path facts of the read-only commands (``the_loop.cli_facts``).

Light on purpose (the standard library only): the CLI's fast path reads through it before it
knows whether it needs pydantic.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

try:  # CPython's own SHA-256: `hashlib` would load OpenSSL (several ms of every command)
    from _sha256 import sha256 as _sha256  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - another interpreter, or Python 3.12+
    try:
        from _sha2 import sha256 as _sha256  # type: ignore[import-not-found]
    except ImportError:
        from hashlib import sha256 as _sha256


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/the-loop``, else ``~/.cache/the-loop``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "the-loop"


def digest(*parts: bytes) -> str:
    """The SHA-256 of PARTS, each length-prefixed (so no two sequences collide)."""
    h = _sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return str(h.hexdigest())


def read_private(path: Path) -> bytes | None:
    """The bytes of PATH when it is ours and nobody else may write it; None otherwise (missing,
    a symlink, another owner's, group- or world-writable, unreadable)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            return None
        with os.fdopen(fd, "rb") as handle:
            fd = -1
            return handle.read()
    except OSError:
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def write_private(folder: Path, name: str, data: bytes) -> None:
    """Write DATA to FOLDER/NAME atomically, the folder only the user's (0700), the file 0600;
    raises ``OSError`` when it cannot."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    tmp.replace(folder / name)
