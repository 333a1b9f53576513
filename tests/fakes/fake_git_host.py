"""A fake Git host on loopback: real repositories served over Git's smart HTTP by Git's own
``git http-backend`` (CGI) behind a ``ThreadingHTTPServer``.

Repositories are bare, under ``root/<owner>/<repo>.git``. Fetching is open to anyone; pushing
(``git-receive-pack``) needs ``Authorization: Basic`` with a known token as its password (as
GitHub takes ``x-access-token:<token>``), else ``401``. Every request is recorded with the
token it carried (None: none, or an unknown one).
"""

from __future__ import annotations

import base64
import subprocess
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from urllib.parse import urlsplit


@dataclass(frozen=True, slots=True)
class GitRequest:
    method: str
    path: str
    query: str
    token: str | None
    status: int


class FakeGitHost:
    def __init__(self, root: Path, tokens: set[str]) -> None:
        self.root = root
        self.tokens = set(tokens)
        self.log: list[GitRequest] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def __enter__(self) -> FakeGitHost:
        host = self

        class Handler(_Handler):
            fake = host

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def create_repo(self, full_name: str, files: dict[str, str]) -> Path:
        """A bare repository FULL_NAME whose ``main`` holds one commit of FILES."""
        bare = self.root / f"{full_name}.git"
        work = self.root / "_work" / full_name
        work.mkdir(parents=True)
        for name, text in files.items():
            (work / name).write_text(text)
        git = ["git", "-c", "user.name=fake", "-c", "user.email=fake@example.org"]
        for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "first"]):
            subprocess.run([*git, *args], cwd=work, check=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
        return bare

    def branches(self, full_name: str) -> dict[str, str]:
        """Branch name -> commit of the bare repository FULL_NAME."""
        out = subprocess.run(
            ["git", "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads"],
            cwd=self.root / f"{full_name}.git",
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        return dict(line.split(" ", 1) for line in out.splitlines())

    def requests(self) -> list[GitRequest]:
        with self._lock:
            return list(self.log)

    def record(self, request: GitRequest) -> None:
        with self._lock:
            self.log.append(request)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHost
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _token(self) -> str | None:
        header = self.headers.get("Authorization", "")
        if not header.startswith("Basic "):
            return None
        try:
            _, _, secret = base64.b64decode(header[6:]).decode().partition(":")
        except ValueError:
            return None
        return secret if secret in self.fake.tokens else None

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", ""):
            out = b""
            while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                out += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
            return out
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urlsplit(self.path)
        token = self._token()
        body = self._body() if self.command == "POST" else b""
        pushing = "git-receive-pack" in url.path or "service=git-receive-pack" in url.query
        if pushing and token is None:
            self.fake.record(GitRequest(self.command, url.path, url.query, None, 401))
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="fake git"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        env = {
            "GIT_PROJECT_ROOT": str(self.fake.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "PATH_INFO": url.path,
            "QUERY_STRING": url.query,
            "REQUEST_METHOD": self.command,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "REMOTE_USER": "pusher" if token else "",
            "REMOTE_ADDR": "127.0.0.1",
            "PATH": "/usr/bin:/bin",
        }
        done = subprocess.run(
            ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
        )
        head, _, payload = done.stdout.partition(b"\r\n\r\n")
        status = 200
        headers = []
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self.fake.record(GitRequest(self.command, url.path, url.query, token, status))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)
