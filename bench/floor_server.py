"""The machine's floor for an acknowledgement: the least a server can do per delivery.

A blocking, single-threaded loopback server (no framework, no event loop): accept, read the
request head and its ``Content-Length`` body, optionally append the body to a file and
``fdatasync`` it (``--durable``), answer a fixed ``202`` and close. ``webhook_ack.py`` runs it
in a process of its own, beside the daemon, and sends it the same requests with the same
client, so the daemon's figure is printed next to what this machine allows in that run.

    python bench/floor_server.py [--durable FILE]     # prints the port, then serves
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

ANSWER = (
    b"HTTP/1.1 202 Accepted\r\ncontent-type: application/json\r\ncontent-length: 17\r\n"
    b'connection: close\r\n\r\n{"accepted":true}'
)


def _request_body(conn: socket.socket) -> bytes:
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        buf += chunk
    head, _, body = buf.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            break
        body += chunk
    return body


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--durable", help="append each body to this file and fdatasync it")
    args = parser.parse_args()
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    fd = os.open(args.durable, flags, 0o600) if args.durable else -1
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    print(server.getsockname()[1], flush=True)
    sys.stdout.close()
    while True:
        conn, _ = server.accept()
        with conn:
            body = _request_body(conn)
            if fd >= 0:
                os.write(fd, body)
                os.fdatasync(fd)
            conn.sendall(ANSWER)


if __name__ == "__main__":
    main()
