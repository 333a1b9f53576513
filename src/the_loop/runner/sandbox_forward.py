"""Run inside a confined agent's sandbox (``network: allowlist``): forward loopback ports to
the daemon's egress proxy, then ``exec`` the harness.

``python -I -S sandbox_forward.py SOCKET PORT=MODE… -- ARGV…``: this process listens on
``127.0.0.1:PORT`` for each ``PORT=MODE`` (``proxy``: an HTTP/CONNECT proxy, what
``HTTPS_PROXY`` names; ``port:N``: the allowlisted loopback port N of the host, mirrored on
the same port), then a child process carries each connection to the unix socket SOCKET after
one line naming the agent, its hook token and the MODE, and this process becomes ARGV (the
pane's program keeps its pid and terminal). The ports listen before the harness starts, so a
connection it makes at once waits until the child takes it: on a loaded host the child could
still be starting, and such a connection was refused. The sandbox has no other network: what
the daemon refuses is unreachable. Only the standard library; nothing is imported before the
fork but ``os``, ``sys`` and ``_socket`` (the C module, a fraction of a millisecond: the
harness's start is not delayed).
"""

import _socket
import os
import sys


def main() -> None:
    args = sys.argv[1:]
    cut = args.index("--")
    socket_path, specs, argv = args[0], args[1:cut], args[cut + 1 :]
    listening = []
    for spec in specs:
        port, _, mode = spec.partition("=")
        listening.append((listen_on(int(port)), mode))
    if os.fork() == 0:
        try:
            serve(socket_path, [(sock.detach(), mode) for sock, mode in listening])
        finally:
            os._exit(0)
    for sock, _ in listening:
        sock.close()  # the child has its own copies; the harness gets none
    os.execvp(argv[0], argv)


def listen_on(port: int) -> _socket.socket:
    """A socket listening on 127.0.0.1:PORT."""
    sock = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    sock.setsockopt(_socket.SOL_SOCKET, _socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    return sock


def serve(socket_path: str, listening: list[tuple[int, str]]) -> None:
    import socket  # lazy: only the forwarding child needs it (the harness starts at once)
    import threading  # lazy: likewise

    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # never write into the agent's pane
    os.setsid()
    agent = os.environ.get("THE_LOOP_AGENT", "")
    token = os.environ.get("THE_LOOP_HOOK_TOKEN", "")

    def pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for end in (src, dst):
                try:  # noqa: SIM105  (no contextlib: nothing more to import)
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def carry(client: socket.socket, mode: str) -> None:
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(socket_path)
            upstream.sendall(f"{agent} {token} {mode}\n".encode())
        except OSError:
            client.close()
            upstream.close()
            return
        threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
        pump(upstream, client)

    def accept(listener: socket.socket, mode: str) -> None:
        while True:
            client, _ = listener.accept()
            threading.Thread(target=carry, args=(client, mode), daemon=True).start()

    threads = []
    for fd, mode in listening:
        listener = socket.socket(fileno=fd)
        thread = threading.Thread(target=accept, args=(listener, mode), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
