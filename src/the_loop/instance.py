"""One daemon per state dir, and how a client finds and asks it: the ``flock`` on
``daemon.lock``, the ``daemon.json`` a running daemon publishes, the config it runs on
(``daemon-config.json``, and a pointer from the config file to its state dir), the token a
local client presents, and one GET over ``http.client``.

Light on purpose (the standard library only): the CLI's read-only commands find and ask the
daemon through here before they know whether they need the config models
(docs/decisions/0065); the doctor and inbox replay ask ``daemon_running`` without loading the
daemon.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from pathlib import Path
from typing import IO, Any, NamedTuple

from the_loop.agent_files import Folder
from the_loop.errors import AlreadyRunning, StateError

LOCK_NAME = "daemon.lock"
INFO_NAME = "daemon.json"
RECORD_NAME = "daemon-config.json"
TOKEN_FILE = "api-token"
CONFIG_ENV = "THE_LOOP_CONFIG"
CONFIG_HEADER = "X-The-Loop-Config"
"""Names the config an answer was computed under: its file's digest, or ``defaults``."""


def resolve_config_path(explicit: Path | None = None) -> Path | None:
    """The config file to read: EXPLICIT, else $THE_LOOP_CONFIG, else ``./the-loop.yaml``, else
    ``~/.config/the-loop/config.yaml``; None for all defaults."""
    if explicit is not None:
        return explicit
    env = os.environ.get(CONFIG_ENV)
    if env:
        return Path(env)
    for candidate in (Path("the-loop.yaml"), Path("~/.config/the-loop/config.yaml").expanduser()):
        if candidate.is_file():
            return candidate
    return None


def config_digest(raw: bytes) -> str:
    """The digest naming a config file's bytes RAW (``CONFIG_HEADER``, the daemon's record)."""
    return hashlib.sha256(raw).hexdigest()


class DaemonInfo(NamedTuple):
    """What a running daemon writes next to its lock so clients can find it. (Records on the
    CLI's path are named tuples and plain classes: ``dataclasses`` alone costs a read command
    about 11 ms of imports, ``inspect`` with it.)"""

    pid: int
    url: str
    host: str
    port: int
    version: str
    started_at: float
    config_path: str | None = None


class DaemonLock:
    """A held ``flock`` on the state dir's lock file; released when the process exits."""

    def __init__(self, handle: IO[str]) -> None:
        self.handle = handle

    def release(self) -> None:
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def daemon_running(state_dir: Path) -> bool:
    """True when some process holds STATE_DIR's daemon lock."""
    path = state_dir / LOCK_NAME
    if not path.exists():
        return False
    with path.open("a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def acquire_lock(state_dir: Path) -> DaemonLock:
    """Take the single-daemon lock of STATE_DIR or raise ``AlreadyRunning`` naming the holder."""
    state_dir.mkdir(parents=True, exist_ok=True)
    try:
        handle = (state_dir / LOCK_NAME).open("a+", encoding="utf-8")
    except OSError as exc:
        raise StateError(f"cannot open {state_dir / LOCK_NAME}: {exc.strerror}") from None
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        info = read_info(state_dir)
        where = f" (pid {info.pid}, {info.url})" if info else ""
        raise AlreadyRunning(
            f"another the-loop daemon already serves the state dir {state_dir}{where}; "
            "stop it with `the-loop stop` or use another stateDir"
        ) from None
    return DaemonLock(handle)


def read_info(state_dir: Path) -> DaemonInfo | None:
    """What the daemon of STATE_DIR wrote about itself; None when nothing (valid) is there."""
    try:
        data = json.loads((state_dir / INFO_NAME).read_text("utf-8"))
        names = set(DaemonInfo._fields)
        info = DaemonInfo(**{k: v for k, v in data.items() if k in names})
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    ok = isinstance(info.pid, int) and isinstance(info.url, str) and isinstance(info.port, int)
    return info if ok and isinstance(info.started_at, int | float) else None


def write_info(state_dir: Path, info: DaemonInfo) -> None:
    """Publish INFO for clients, atomically (a reader sees the old file or the new one)."""
    tmp = state_dir / f".{INFO_NAME}.{os.getpid()}"
    tmp.write_text(json.dumps(info._asdict()), encoding="utf-8")
    tmp.replace(state_dir / INFO_NAME)


def local_token(token_env: str, state_dir: Path) -> str | None:
    """The token a local client presents: $TOKEN_ENV, else the state dir's generated one."""
    env = os.environ.get(token_env)
    if env:
        return env
    try:
        return (state_dir / TOKEN_FILE).read_text("utf-8").strip() or None
    except OSError:
        return None


def ask(
    url: str, path: str, token: str | None, timeout: float
) -> tuple[int, bytes, dict[str, str]]:
    """GET PATH of the daemon at URL (``http://host:port``) with TOKEN: its HTTP status, body
    and headers (names in lower case); ``OSError`` when it does not answer."""
    import http.client  # lazy: only a command that asks the daemon
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme != "http" or parts.hostname is None or parts.port is None:
        raise OSError(f"not a daemon URL: {url!r}")
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout)
    headers = {"Accept": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        conn.request("GET", path, headers=headers)
        answer = conn.getresponse()
        body = answer.read()
        return answer.status, body, {k.lower(): v for k, v in answer.getheaders()}
    except http.client.HTTPException as exc:
        raise OSError(f"the daemon's answer is not HTTP: {exc!r}") from None
    finally:
        conn.close()


# --- the config a daemon runs on (docs/decisions/0017, 0065) ----------------------------------


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "the-loop"


def _pointer(config_path: Path | None) -> Path:
    where = b"defaults" if config_path is None else os.fsencode(os.path.realpath(config_path))
    return _cache_dir() / "daemons" / f"{hashlib.sha256(where).hexdigest()[:32]}.json"


def _write_private(target: Path, text: str) -> None:
    """TEXT to TARGET whole or not at all, its folder only the user's (0700), the file 0600."""
    with Folder(target.parent, agents=False) as folder:
        folder.replace(target.name, text)


def record_running(
    state_dir: Path,
    config_path: Path | None,
    digest: str | None,
    config: dict[str, Any],
    pid: int,
) -> None:
    """Record CONFIG (JSON, camelCase; DIGEST names the file's bytes, None for the defaults)
    as what the daemon PID of STATE_DIR runs on, and point CONFIG_PATH (None: the defaults) at
    STATE_DIR. Best effort: a record that cannot be written is skipped."""
    real = os.path.realpath(config_path) if config_path is not None else None
    body = {
        "configPath": real,
        "digest": digest or "defaults",
        "pid": pid,
        "recordedAt": time.time(),
        "config": config,
    }
    with contextlib.suppress(OSError):
        _write_private(state_dir / RECORD_NAME, json.dumps(body))
    pointer = {"configPath": real, "stateDir": str(state_dir)}
    with contextlib.suppress(OSError):
        _write_private(_pointer(config_path), json.dumps(pointer))


def recorded(config_path: Path | None) -> tuple[Path, dict[str, Any]] | None:
    """The state dir and record the last daemon started on CONFIG_PATH (None: the defaults)
    left, or None."""
    real = os.path.realpath(config_path) if config_path is not None else None
    try:
        pointer = json.loads(_pointer(config_path).read_bytes())
        state_dir = Path(pointer["stateDir"])
        body = json.loads((state_dir / RECORD_NAME).read_bytes())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(body, dict) or body.get("configPath") != real:
        return None
    if not isinstance(body.get("config"), dict):
        return None
    return state_dir, body
