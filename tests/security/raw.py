"""Raw HTTP over a socket, for the tests of what the server does before and while it reads a
request (what an HTTP client library would not send: a body trickled, a head left open)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

from tests.daemon import Daemon


def address(daemon: Daemon) -> tuple[str, int]:
    host, port = daemon.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """The status and whatever else arrived until the server closed or went quiet (5 s)."""
    data = b""
    while True:
        try:
            chunk = sock.recv(65536)
        except (TimeoutError, ConnectionResetError):
            break
        if not chunk:
            break
        data += chunk
        if b"\r\n\r\n" in data:
            head_part, _, rest = data.partition(b"\r\n\r\n")
            length = [
                int(line.split(b":", 1)[1])
                for line in head_part.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ]
            if length and len(rest) >= length[0]:
                break
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, data


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def send_big_body(daemon: Daemon, path: str, size: int, headers: dict[str, str]) -> int:
    """POST SIZE bytes to PATH as fast as the server takes them; the status it answered."""
    with socket.create_connection(address(daemon), timeout=30) as sock:
        sock.sendall(head("POST", path, {"Content-Length": str(size), **headers}))
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < size:
                sent += sock.send(chunk[: size - sent])
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed: the rest was never read
        sock.settimeout(10)
        return read_response(sock)[0]


def trickle(
    daemon: Daemon, path: str, headers: dict[str, str], declared: int, every: float
) -> tuple[int, float]:
    """Declare DECLARED bytes and send one every EVERY seconds; (status, seconds taken)."""
    started = time.monotonic()
    with socket.create_connection(address(daemon), timeout=60) as sock:
        sock.sendall(head("POST", path, {"Content-Length": str(declared), **headers}))
        sock.settimeout(every)
        for _ in range(declared):
            try:
                sock.sendall(b"{")
                reply = sock.recv(65536)
            except TimeoutError:
                continue  # nothing yet: one more byte
            except (BrokenPipeError, ConnectionResetError):
                break
            if reply:
                return int(reply.split(b" ", 2)[1]), time.monotonic() - started
        sock.settimeout(10)
        status, _ = read_response(sock)
    return status, time.monotonic() - started
