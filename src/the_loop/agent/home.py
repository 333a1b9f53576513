"""Files the daemon writes into an agent's own home: a directory the agent can write too, so the
daemon never writes through a symlink the agent left there (a planted link would otherwise make
the daemon overwrite a file of its own choosing, such as the state database)."""

from __future__ import annotations

import os
from pathlib import Path


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
