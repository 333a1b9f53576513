"""The operator's own settings files of a harness, read once per change of each file.

The egress proxy asks where a confined agent's model API is on every connection it forwards;
the answer comes from files the operator edits by hand (Codex's ``config.toml``, Claude Code's
``settings.json``), so each is parsed again only when its modification time or size changes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any


def parsed(path: Path, parse: Callable[[str], Any]) -> Any:
    """PARSE applied to the text of the file at PATH, as it is now; None when the file is
    missing or unreadable, or PARSE raises ``ValueError`` (TOML and JSON errors are)."""
    try:
        found = path.stat()
    except OSError:
        return None
    return _parsed(str(path), found.st_mtime_ns, found.st_size, parse)


@functools.lru_cache(maxsize=32)
def _parsed(path: str, mtime_ns: int, size: int, parse: Callable[[str], Any]) -> Any:
    try:
        return parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
