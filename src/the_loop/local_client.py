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
CONFIG_HEADER = "X-The-Loop-Config"
"""Names the config an answer was computed under: its file's digest, or ``defaults``."""


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
    """GET PATH of the daemon at URL (``http://host:port``) with TOKEN: its HTTP status and
    body; ``OSError`` when it does not answer, or answers something that is not HTTP/1.1 with
    a length. One request on a plain socket: ``http.client`` would load the ``email`` package
    (several ms of every ``status``)."""
    status, _, body = fetch(url, path, token, timeout)
    return status, body


def fetch(
    url: str, path: str, token: str | None, timeout: float
) -> tuple[int, dict[str, str], bytes]:
    """As ``get``, with the answer's headers (names in lower case)."""
    # lazy: start-up (the socket module loads only when a daemon runs)
    import socket

    host, port = _host_port(url)
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n{auth}"
        "Accept: application/json\r\nConnection: close\r\n\r\n"
    ).encode("latin-1")
    with socket.create_connection((host.strip("[]"), port), timeout=timeout) as conn:
        conn.sendall(request)
        chunks = []
        while chunk := conn.recv(65536):
            chunks.append(chunk)
    return _response(b"".join(chunks))


def _host_port(url: str) -> tuple[str, int]:
    rest = url.removeprefix("http://").split("/", 1)[0]
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise OSError(f"not a daemon URL: {url!r}")
    return host, int(port)


def _response(raw: bytes) -> tuple[int, dict[str, str], bytes]:
    head, sep, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if not sep or len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise OSError("the daemon's answer is not HTTP")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = headers.get("content-length")
    if "chunked" in headers.get("transfer-encoding", "") or (
        length is not None and (not length.isdigit() or int(length) != len(body))
    ):
        raise OSError("the daemon's answer is cut short or chunked")
    return int(parts[1]), headers, body
