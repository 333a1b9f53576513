"""The few settings the CLI's fast path needs, kept beside the validated-config cache.

The read-only commands ``sessions list``, ``events`` and ``status`` answer without loading
typer, pydantic or the config models (``the_loop.cli.fast``; docs/decisions/0033). They need
only a handful of settings: the state dir, whether the store is SQLite, the token variable and
the price table. Whenever the full CLI loads a config that validated, it keeps those settings
as plain JSON under a key covering everything the values depend on: the file's bytes, the
resolved file path, the-loop's and Python's versions, and the size and modification time of
every module that defines or reads the config models. The fast path computes the same key
from the same file; a miss (a changed byte, an upgrade, an invalid file never stored) sends
the command down the full path, which validates and stores the facts again.

Light on purpose: the standard library only (the fast path imports it first).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from the_loop import __version__
from the_loop.private_cache import cache_dir, digest, read_private, write_private

CONFIG_ENV = "THE_LOOP_CONFIG"
FOLDER = "facts"
FORMAT = 1
"""The shape of a facts entry; bump it when the fields change."""


def resolve_config_path(explicit: Path | None = None) -> Path | None:
    """Apply the resolution order; return the file to read, or None for all defaults."""
    if explicit is not None:
        return explicit
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    for candidate in (Path("the-loop.yaml"), Path("~/.config/the-loop/config.yaml").expanduser()):
        if candidate.is_file():
            return candidate
    return None


def _code_signature() -> bytes:
    """The size and mtime of the modules whose code the facts depend on."""
    package = Path(__file__).parent
    parts = []
    for path in sorted(package.glob("config*.py")):
        try:
            info = path.stat()
        except OSError:
            continue
        parts.append(f"{path.name}:{info.st_size}:{info.st_mtime_ns}")
    return "\n".join(parts).encode()


def facts_key(path: Path | None, raw: bytes) -> str:
    """The key of the facts of the config file PATH holding RAW (None: all defaults)."""
    where = b"defaults" if path is None else os.fsencode(os.path.realpath(path))
    version = f"facts {FORMAT}; the-loop {__version__}; python {sys.version}".encode()
    return digest(version, _code_signature(), where, raw)


def read_facts(key: str) -> dict[str, Any] | None:
    """The facts stored under KEY, or None."""
    data = read_private(cache_dir() / FOLDER / f"{key}.json")
    if data is None:
        return None
    try:
        facts = json.loads(data.decode("utf-8"))
    except ValueError:
        return None
    return facts if isinstance(facts, dict) and facts.get("format") == FORMAT else None


def write_facts(key: str, facts: dict[str, Any]) -> None:
    """Keep FACTS under KEY unless they are there already (best effort)."""
    folder = cache_dir() / FOLDER
    if (folder / f"{key}.json").exists():
        return
    try:
        write_private(folder, f"{key}.json", json.dumps({**facts, "format": FORMAT}).encode())
        entries = sorted(folder.glob("*.json"), key=_mtime, reverse=True)
        for old in entries[32:]:
            old.unlink(missing_ok=True)
    except OSError:
        return


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
