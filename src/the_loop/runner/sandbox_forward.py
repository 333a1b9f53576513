"""Run inside a confined agent's sandbox (``network: allowlist``): forward loopback ports to
the daemon's egress proxy, then ``exec`` the harness.

``python -I -S sandbox_forward.py SOCKET PORT=MODE… -- ARGV…``: a child process listens on
``127.0.0.1:PORT`` for each ``PORT=MODE`` (``proxy``: an HTTP/CONNECT proxy, what
``HTTPS_PROXY`` names; ``port:N``: the allowlisted loopback port N of the host, mirrored on
the same port) and carries each connection to the unix socket SOCKET after one line naming
the agent, its hook token and the MODE; this process becomes ARGV at once (the pane's program
keeps its pid and terminal). The sandbox has no other network: what the daemon refuses is
unreachable. Only the standard library; nothing is imported before the fork but ``os`` and
``sys`` (the harness's start is not delayed).
"""

import os
import sys


def main() -> None:
    args = sys.argv[1:]
    cut = args.index("--")
    socket_path, specs, argv = args[0], args[1:cut], args[cut + 1 :]
    if os.fork() == 0:
        try:
            serve(socket_path, specs)
        finally:
            os._exit(0)
    os.execvp(argv[0], argv)


def serve(socket_path: str, specs: list[str]) -> None:
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
    for spec in specs:
        port, _, mode = spec.partition("=")
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        thread = threading.Thread(target=accept, args=(listener, mode), daemon=True)
        thread.start()
        threads.append(thread)
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
