"""A real PostgreSQL for the tests: one server per test process (xdist worker), one database
per test, copied from a template the migrations ran on once.

The Debian binaries (``/usr/lib/postgresql/<v>/bin``) are required: without them the tests that
need PostgreSQL fail, naming the package to install (``make setup`` installs it). PostgreSQL
refuses to run as root, so as root the server runs as ``nobody`` in a data directory it owns.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

TEMPLATE = "the_loop_template"
UNPRIVILEGED = "nobody"


def pg_bin() -> Path:
    """The directory of ``initdb`` and ``pg_ctl`` (the newest installed version)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_version)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("initdb")
    if on_path:
        return Path(on_path).resolve().parent
    pytest.fail(
        "PostgreSQL is not installed (no /usr/lib/postgresql/*/bin/initdb): run `make setup` "
        "or `apt-get install postgresql`; the store tests also run against PostgreSQL",
        pytrace=False,
    )


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PgServer:
    """A running server: its directory, port and the user it runs as."""

    root: Path
    port: int
    bindir: Path

    def url(self, dbname: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{dbname}"

    def admin(self, sql: str) -> None:
        import psycopg  # lazy: only tests that use PostgreSQL load the driver

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.encode())

    def new_database(self) -> str:
        """A fresh, migrated database's URL (a copy of the template)."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        return self.url(name)

    def stop(self) -> None:
        _as_owner(
            [str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate", "stop"],
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)


def _as_owner(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    if os.getuid() == 0:
        argv = ["runuser", "-u", UNPRIVILEGED, "--", *argv]
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=120)


def start_server(durable: bool = False) -> PgServer:
    """initdb into a private temporary directory and start a server on a free loopback port
    (``fsync`` off unless DURABLE: the tests crash our processes, never the machine; a
    benchmark wants the real cost)."""
    bindir = pg_bin()
    root = Path(tempfile.mkdtemp(prefix="the-loop-pg-"))
    if os.getuid() == 0:
        shutil.chown(root, UNPRIVILEGED, "nogroup")
    root.chmod(0o700)
    data = root / "data"
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres"]
        _as_owner([*initdb, "-E", "UTF8", "--no-sync", "--no-instructions"])
    except subprocess.CalledProcessError as exc:
        pytest.fail(f"initdb failed: {exc.stderr.strip()}", pytrace=False)
    for attempt in range(5):
        port = _free_port()
        options = f"-k {root} -c listen_addresses=127.0.0.1 -p {port} -c max_connections=300"
        if not durable:
            options += " -c fsync=off -c full_page_writes=off -c shared_buffers=32MB"
        pg_ctl = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options]
        started = _as_owner([*pg_ctl, "-l", str(root / "log"), "-w", "-t", "60", "start"], False)
        if started.returncode == 0:
            server = PgServer(root=root, port=port, bindir=bindir)
            _make_template(server)
            return server
        if attempt == 4:
            log = (root / "log").read_text(errors="replace") if (root / "log").exists() else ""
            pytest.fail(f"PostgreSQL did not start: {started.stderr.strip()}\n{log}")
    raise AssertionError("unreachable")


def _make_template(server: PgServer) -> None:
    from the_loop.store.pg import open_postgres  # lazy: only PostgreSQL tests load it

    server.admin(f"CREATE DATABASE {TEMPLATE}")
    db = open_postgres(server.url(TEMPLATE))
    db.close()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """This test process's PostgreSQL server (started on first use, about a second)."""
    server = start_server()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """A fresh, migrated database of its own for this test, dropped after it (about 8 MB each:
    a long run would otherwise fill the temporary directory)."""
    url = pg_server.new_database()
    yield url
    name = url.rsplit("/", 1)[1]
    pg_server.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
