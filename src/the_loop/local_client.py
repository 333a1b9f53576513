"""Finding and asking this state dir's daemon, with the standard library only: whether one
runs (the ``flock`` on ``daemon.lock``), the token a local client presents, and one GET over
``http.client``. ``status`` is a fast command: both its paths (``status_client`` and the CLI's
fast path, ``cli.fast``) ask through here.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCK_NAME = "daemon.lock"
INFO_NAME = "daemon.json"
TOKEN_FILE = "api-token"


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


def local_token(token_env: str, state_dir: Path) -> str | None:
    """The token a local client presents: $TOKEN_ENV, else the state dir's generated one."""
    env = os.environ.get(token_env)
    if env:
        return env
    try:
        return (state_dir / TOKEN_FILE).read_text("utf-8").strip() or None
    except OSError:
        return None


def get(url: str, path: str, token: str | None, timeout: float) -> tuple[int, bytes]:
    """GET PATH of the daemon at URL with TOKEN: its HTTP status and body; ``OSError`` when
    it does not answer."""
    # lazy: start-up (the HTTP client loads only when a daemon runs)
    import http.client
    from urllib.parse import urlsplit

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=timeout)
    try:
        conn.request("GET", path, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    except http.client.HTTPException as exc:
        raise OSError(str(exc) or type(exc).__name__) from exc
    finally:
        conn.close()
