"""Where the real agent CLIs are, for the tests that need them."""

from __future__ import annotations

import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CLAUDE_BIN = REPO / "node_modules" / ".bin" / "claude"


def find_cli(name: str) -> str | None:
    """The project's pinned copy under node_modules/.bin, else one on PATH."""
    local = REPO / "node_modules" / ".bin" / name
    if local.exists():
        return str(local)
    return shutil.which(name)
