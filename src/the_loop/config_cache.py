"""What the CLI keeps outside the config file: validated configs, and the config a daemon runs on.

**The validated-config cache.** Validating the config (building pydantic's validators, then
running them) costs most of a short command's start-up. A config that validated is kept, as
the validated object, under a key that covers everything the result depends on: the file's
bytes, the-loop's version, the Python and pydantic versions, the source of every module that
defines a config model, and the environment variables validation reads (none today). Change
one byte of any of them and the key changes, so the file is validated again; an invalid file
is never stored. Entries live in ``$XDG_CACHE_HOME/the-loop/config`` (else
``~/.cache/the-loop/config``), a directory only the user can open; an entry not owned by the
user or writable by others is ignored, and so is any entry that does not load. At most
``MAX_ENTRIES`` are kept.

**The config a daemon runs on.** A daemon writes the config it runs on (as JSON, camelCase) to
``daemon-config.json`` in its state dir at start and after each reload, and a pointer from the
config file's path to that state dir in ``…/the-loop/daemons``. When the file on disk is
invalid, the CLI can still find the state dir and the settings the daemon uses (docs/decisions
0017).
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import sys
import time
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from the_loop.private_cache import cache_dir, digest, read_private, write_private

MAX_ENTRIES = 32
RECORD_NAME = "daemon-config.json"
T = TypeVar("T")

_LOAD_ERRORS = (
    pickle.UnpicklingError,
    EOFError,
    AttributeError,
    ImportError,
    IndexError,
    KeyError,
    TypeError,
    ValueError,
)
"""What unpickling an entry written by another version can raise: such an entry is a miss."""


def load_validated(key: str, kind: type[T]) -> T | None:
    """The cached KIND under KEY, or None (missing, not ours, or not loadable)."""
    data = read_private(cache_dir() / "config" / f"{key}.pickle")
    if data is None:
        return None
    try:
        # our own entry, in a directory only we can open, from a file only we can write
        value = pickle.loads(data)
    except _LOAD_ERRORS:
        return None
    return value if isinstance(value, kind) else None


def store_validated(key: str, value: object) -> None:
    """Keep VALUE (already validated) under KEY; a cache that cannot be written is skipped."""
    folder = cache_dir() / "config"
    with contextlib.suppress(OSError, pickle.PicklingError):
        write_private(folder, f"{key}.pickle", pickle.dumps(value, protocol=5))
        _prune(folder)


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.pickle"), key=_mtime, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


_SOURCES: dict[type[BaseModel], list[bytes]] = {}


def model_sources(model: type[BaseModel]) -> list[bytes]:
    """The source of every module defining a model reachable from MODEL (read once a process):
    part of the cache key, so that a changed model never meets an object pickled before."""
    if model not in _SOURCES:
        files: set[str] = set()
        _collect_files(model, files, set())
        out = []
        for name in sorted(files):
            try:
                out.append(Path(name).read_bytes())
            except OSError:
                out.append(name.encode())
        _SOURCES[model] = out
    return _SOURCES[model]


def _collect_files(model: type[BaseModel], files: set[str], seen: set[type[BaseModel]]) -> None:
    if model in seen:
        return
    seen.add(model)
    module = sys.modules.get(model.__module__)
    files.add(getattr(module, "__file__", None) or model.__module__)
    for field in model.model_fields.values():
        for kind in _models_in(field.annotation):
            _collect_files(kind, files, seen)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


# --- the config a daemon runs on -------------------------------------------------------------


def _pointer(config_path: Path) -> Path:
    key = digest(os.fsencode(os.path.realpath(config_path)))[:32]
    return cache_dir() / "daemons" / f"{key}.json"


def record_running(
    state_dir: Path, config_path: Path | None, config: dict[str, Any], pid: int
) -> None:
    """Record CONFIG (JSON, camelCase) as what the daemon PID of STATE_DIR runs on, and point
    CONFIG_PATH at STATE_DIR. Best effort: a record that cannot be written is skipped."""
    real = os.path.realpath(config_path) if config_path is not None else None
    body = {"configPath": real, "pid": pid, "recordedAt": time.time(), "config": config}
    with contextlib.suppress(OSError):
        write_private(state_dir, RECORD_NAME, json.dumps(body).encode())
    if config_path is not None:
        pointer = {"configPath": real, "stateDir": str(state_dir)}
        with contextlib.suppress(OSError):
            target = _pointer(config_path)
            write_private(target.parent, target.name, json.dumps(pointer).encode())


def recorded(config_path: Path) -> tuple[Path, dict[str, Any]] | None:
    """The state dir and record a daemon left for CONFIG_PATH, or None."""
    try:
        pointer = json.loads(_pointer(config_path).read_bytes())
        state_dir = Path(pointer["stateDir"])
        body = json.loads((state_dir / RECORD_NAME).read_bytes())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(body, dict) or body.get("configPath") != os.path.realpath(config_path):
        return None
    if not isinstance(body.get("config"), dict):
        return None
    return state_dir, body
