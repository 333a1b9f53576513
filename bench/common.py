"""What every benchmark shares: machine facts, statistics, isolated installations, a daemon
launcher, a small keep-alive HTTP client, result files and hand-written SVG plots.

Every benchmark runs against its own installation: a temporary directory holding the state
dir, the config file, the fake agent's records and ``HOME``, plus a private tmux server
(``tmux -L the-loop-bench-<random>``). ``Install`` removes all of it (and stops the daemon and
the tmux server) when its ``with`` block ends. Traffic stays on loopback.

Results go to ``bench/results/<name>.json`` (scratch, gitignored); ``run_all.py`` turns the
latest ones into ``docs/performance.md``. Plots go to ``docs/perf/<name>-*.svg``.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import math
import os
import platform
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import yaml

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
PLOTS = REPO / "docs" / "perf"
PYTHON = sys.executable
SECRET = "webhook-secret-for-the-benchmarks"

if str(REPO) not in sys.path:  # the fakes live in tests/
    sys.path.insert(0, str(REPO))

T = TypeVar("T")


# --- waiting ---------------------------------------------------------------------------------


def wait_until(
    condition: Callable[[], T], timeout: float = 30.0, interval: float = 0.005, what: str = ""
) -> T:
    """Poll CONDITION until it returns something truthy; return it, or raise after TIMEOUT."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout}s waiting for {what or condition}")
        pause.wait(interval)


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, every thread) process PID has used so far (``/proc/PID/stat``);
    ``OSError`` once it is gone."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def progress(message: str) -> None:
    print(f"  .. {message}", flush=True)


# --- machine facts ---------------------------------------------------------------------------


def _first_match(path: str, pattern: str) -> str:
    try:
        text = Path(path).read_text("utf-8", errors="replace")
    except OSError:
        return "unknown"
    m = re.search(pattern, text, re.MULTILINE)
    return m.group(1).strip() if m else "unknown"


def _command_version(argv: list[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return "unavailable"
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr) else ""


def machine_facts() -> dict[str, str]:
    """CPU model, cores, RAM, kernel, Python, SQLite, tmux and the-loop versions."""
    import the_loop

    mem_kb = _first_match("/proc/meminfo", r"^MemTotal:\s+(\d+)")
    ram = f"{int(mem_kb) / 1024 / 1024:.1f} GiB" if mem_kb.isdigit() else "unknown"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "cpu": _first_match("/proc/cpuinfo", r"^model name\s*:\s*(.+)$"),
        "cores": f"{os.cpu_count()} ({usable} usable)",
        "ram": ram,
        "kernel": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "tmux": _command_version(["tmux", "-V"]),
        "the-loop": the_loop.__version__,
        "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
    }


def print_facts(facts: dict[str, str]) -> None:
    print("machine: " + ", ".join(f"{k} {v}" for k, v in facts.items()), flush=True)


# --- statistics ------------------------------------------------------------------------------


def percentile(ordered: Sequence[float], q: float) -> float:
    """The Q-th percentile (0..100) of ORDERED values, interpolated linearly between ranks."""
    if not ordered:
        return math.nan
    if len(ordered) == 1:
        return float(ordered[0])
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


@dataclass(frozen=True)
class Summary:
    n: int
    mean: float
    p50: float
    p95: float
    p99: float
    min: float
    max: float

    def line(self, unit: str = "ms") -> str:
        return (
            f"samples {self.n}, median {self.p50:.3f} {unit}, p95 {self.p95:.3f} {unit}, "
            f"p99 {self.p99:.3f} {unit} (min {self.min:.3f}, max {self.max:.3f}, "
            f"mean {self.mean:.3f})"
        )


def summarize(values: Sequence[float]) -> Summary:
    ordered = sorted(values)
    if not ordered:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, nan)
    return Summary(
        n=len(ordered),
        mean=sum(ordered) / len(ordered),
        p50=percentile(ordered, 50),
        p95=percentile(ordered, 95),
        p99=percentile(ordered, 99),
        min=ordered[0],
        max=ordered[-1],
    )


# --- figures and results ---------------------------------------------------------------------


@dataclass
class Figure:
    """One measured figure beside its SPEC §13 target and the earlier system's figure."""

    key: str
    label: str
    value: float
    unit: str
    target: float | None = None
    better: str = "lower"  # or "higher"
    earlier: float | None = None
    earlier_text: str = ""
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.target is None or math.isnan(self.value):
            return None
        if self.better == "lower":
            return self.value <= self.target
        return self.value >= self.target

    def _times_better(self, reference: float | None) -> float | None:
        if reference is None or math.isnan(self.value):
            return None
        if self.better == "lower":
            if self.value <= 0:
                return math.inf if reference > 0 else None
            return reference / self.value
        return self.value / reference if reference else None

    @property
    def vs_target(self) -> float | None:
        """How many times better than the target (> 1 is better)."""
        return self._times_better(self.target)

    @property
    def vs_earlier(self) -> float | None:
        """How many times better than the earlier system (> 1 is better)."""
        return self._times_better(self.earlier)


def rss_figure(key: str, label: str, value: float) -> Figure:
    """A daemon RSS under load: shown beside the idle target, not judged by it."""
    return Figure(key, label, value, "MB", note="SPEC's 100 MB is for an idle daemon")


def fmt_value(value: float | None, unit: str) -> str:
    if value is None:
        return "\u2013"
    if math.isnan(value):
        return "n/a"
    if unit in ("req/s",):
        return f"{value:,.0f} {unit}"
    if unit in ("requests", "sessions", "calls"):
        return f"{value:g} {unit}" if value != int(value) else f"{int(value)} {unit}"
    if unit == "MB":
        return f"{value:.1f} {unit}"
    if unit == "s":
        return f"{value:.2f} {unit}"
    if abs(value) >= 100:
        return f"{value:.0f} {unit}"
    if abs(value) >= 10:
        return f"{value:.1f} {unit}"
    return f"{value:.2f} {unit}"


def fmt_ratio(ratio: float | None) -> str:
    if ratio is None:
        return "\u2013"
    if math.isinf(ratio):
        return "∞"
    return f"{ratio:.2f}\u00d7"


def target_text(fig: Figure) -> str:
    if fig.target is None:
        return "\u2013"
    op = "≤" if fig.better == "lower" else "≥"
    return f"{op} {fmt_value(fig.target, fig.unit)}"


def earlier_text(fig: Figure) -> str:
    if fig.earlier_text:
        return fig.earlier_text
    return fmt_value(fig.earlier, fig.unit) if fig.earlier is not None else "\u2013"


def verdict(fig: Figure) -> str:
    return {True: "met", False: "MISSED", None: "\u2013"}[fig.met]


@dataclass
class Report:
    """What one benchmark script found; saved as JSON for ``run_all.py``."""

    name: str
    title: str
    method: str
    facts: dict[str, str] = field(default_factory=machine_facts)
    figures: list[Figure] = field(default_factory=list)
    distributions: dict[str, dict[str, Any]] = field(default_factory=dict)
    plots: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    seconds: float = 0.0
    load_end: str = ""

    def __post_init__(self) -> None:
        print(f"== {self.title} ({self.name})", flush=True)
        print_facts(self.facts)

    def distribution(
        self, key: str, label: str, values: Sequence[float], unit: str = "ms"
    ) -> Summary:
        """Record and print a distribution (samples, median, p95, p99)."""
        s = summarize(values)
        self.distributions[key] = {
            "label": label,
            "unit": unit,
            "summary": asdict(s),
            "samples": [round(v, 4) for v in values],
        }
        print(f"{label}: {s.line(unit)}", flush=True)
        return s

    def figure(self, fig: Figure) -> Figure:
        self.figures.append(fig)
        return fig

    def note(self, text: str) -> None:
        self.notes.append(text)
        print(f"note: {text}", flush=True)

    def plot(self, path: Path) -> None:
        self.plots.append(path.relative_to(REPO / "docs").as_posix())

    def finish(self) -> Path:
        """Print the figures beside their targets and the earlier system's; save the JSON."""
        self.seconds = round(time.time() - self.started, 1)
        self.load_end = " ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"-- figures ({self.name}, {self.seconds:.0f} s)")
        width = max((len(f.label) for f in self.figures), default=10)
        for f in self.figures:
            print(
                f"{f.label:<{width}}  {fmt_value(f.value, f.unit):>12}  target "
                f"{target_text(f):>12} ({fmt_ratio(f.vs_target)} better)  earlier "
                f"{earlier_text(f):>14} ({fmt_ratio(f.vs_earlier)} better)  {verdict(f)}",
                flush=True,
            )
        print_facts(self.facts)
        print(f"load average at the end: {self.load_end}", flush=True)
        RESULTS.mkdir(parents=True, exist_ok=True)
        path = RESULTS / f"{self.name}.json"
        data = asdict(self)
        path.write_text(json.dumps(data, indent=1, allow_nan=True), encoding="utf-8")
        print(f"saved {path.relative_to(REPO)}", flush=True)
        return path


def load_report(path: Path) -> Report:
    data = json.loads(path.read_text("utf-8"))
    figures = [Figure(**f) for f in data.pop("figures")]
    report = Report.__new__(Report)
    for key, value in data.items():
        setattr(report, key, value)
    report.figures = figures
    return report


# --- processes -------------------------------------------------------------------------------


def rss_mb(pid: int) -> float:
    """Resident set size of PID in MB (VmRSS from /proc/PID/status); NaN when unknown."""
    try:
        text = Path(f"/proc/{pid}/status").read_text("utf-8")
    except OSError:
        return math.nan
    m = re.search(r"^VmRSS:\s+(\d+)\s+kB", text, re.MULTILINE)
    return int(m.group(1)) / 1024 if m else math.nan


def fake_harness(agent_dir: Path) -> dict[str, Any]:
    """The fake interactive agent as a ``command`` harness (the tests' own configuration)."""
    from tests.fakes import fake_agent

    script = str(fake_agent.SCRIPT)
    return {
        "adapter": "command",
        "interactive": [PYTHON, script, "--session-id", "{session_id}", "--", "{prompt}"],
        "resume": [PYTHON, script, "--resume", "{session_id}", "--", "{prompt}"],
        "env": {"FAKE_AGENT_DIR": str(agent_dir)},
    }


class Install:
    """One isolated installation: temp root, state dir, config, agent dir, tmux socket."""

    def __init__(self, name: str) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"the-loop-bench-{name}-"))
        self.state_dir = self.root / "state"
        self.config_path = self.root / "the-loop.yaml"
        self.agent_dir = self.root / "agents"
        self.home = self.root / "home"
        self.socket = f"the-loop-bench-{uuid.uuid4().hex[:10]}"
        self.agent_dir.mkdir()
        self.home.mkdir()
        self.extra_env: dict[str, str] = {}
        self.daemons: list[Daemon] = []
        self.write_config()

    def __enter__(self) -> Install:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def write_config(self, **sections: Any) -> Path:
        """The config: isolated defaults, the fake agent as the default harness, SECTIONS merged
        one level deep (camelCase keys)."""
        data: dict[str, Any] = {
            "stateDir": str(self.state_dir),
            "server": {"port": 0},
            "tmux": {"socket": self.socket, "harnessKillGraceSeconds": 2},
            "harnesses": {"fake": fake_harness(self.agent_dir)},
            "routing": {"defaultHarness": "fake", "authorizedUsers": ["alice"]},
            # the fake agent keeps its records outside its tree: unconfined, as in the tests;
            # bench/sandbox.py measures the sandbox itself
            "sandbox": {"mode": "none"},
        }
        for key, value in sections.items():
            if isinstance(value, dict) and isinstance(data.get(key), dict):
                data[key] = {**data[key], **value}
            else:
                data[key] = value
        self.config_path.write_text(yaml.safe_dump(data), encoding="utf-8")
        return self.config_path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("THE_LOOP_")}
        env.pop("TMUX", None)
        env.pop("TMUX_PANE", None)
        env["THE_LOOP_CONFIG"] = str(self.config_path)
        env["THE_LOOP_WEBHOOK_SECRET"] = SECRET
        env["HOME"] = str(self.home)
        env.update(self.extra_env)
        return env

    def cli_argv(self) -> list[str]:
        """The real console script the user runs (``.venv/bin/the-loop``)."""
        script = Path(PYTHON).parent / "the-loop"
        return [str(script)] if script.exists() else [PYTHON, "-m", "the_loop"]

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*self.cli_argv(), *args],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=self.root,
            timeout=timeout,
            check=False,
        )

    def tmux(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            check=False,
            env={k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")},
        )

    def close(self) -> None:
        for daemon in self.daemons:
            daemon.stop()
        self.tmux("kill-server")
        _kill_stray_agents(self.root)
        socket_dir = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
        (socket_dir / self.socket).unlink(missing_ok=True)
        shutil.rmtree(self.root, ignore_errors=True)


def _kill_stray_agents(root: Path) -> None:
    """SIGKILL processes whose command line names ROOT (agents left after the tmux server)."""
    marker = str(root).encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if marker in cmdline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)


class Daemon:
    """A real ``the-loop serve`` process on the installation's state dir."""

    def __init__(
        self, install: Install, python_args: Sequence[str] = (), launcher: list[str] | None = None
    ) -> None:
        """PYTHON_ARGS go before ``-m the_loop serve`` (``-m cProfile -o FILE`` profiles the
        daemon's main thread, written when it stops); LAUNCHER runs it (``bench/profiled.py``
        wraps it in a profiler of every thread)."""
        self.install = install
        self.python_args = list(python_args)
        self.launcher = launcher or [PYTHON]
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self.host = "127.0.0.1"
        self.port = 0
        self.token = ""
        install.daemons.append(self)

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 60.0) -> Daemon:
        from the_loop.daemon.serve import read_info

        log = (self.install.root / "daemon.log").open("ab")
        self.proc = subprocess.Popen(
            [*self.launcher, *self.python_args, "-m", "the_loop", "serve"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=self.install.env(),
            cwd=self.install.root,
            start_new_session=True,
        )
        log.close()
        proc = self.proc

        def mine() -> Any:
            if proc.poll() is not None:
                raise RuntimeError(f"the daemon exited {proc.returncode}: {self.log_tail()}")
            info = read_info(self.install.state_dir)
            return info if info is not None and info.pid == proc.pid else None

        info = wait_until(mine, timeout=timeout, interval=0.02, what="daemon.json")
        self.url, self.host, self.port = info.url, info.host, info.port
        token_file = self.install.state_dir / "api-token"
        self.token = wait_until(
            lambda: token_file.exists() and token_file.read_text().strip(), timeout=timeout
        )
        wait_until(self._healthy, timeout=timeout, interval=0.02, what="daemon health")
        return self

    def _healthy(self) -> bool:
        try:
            status, _ = http_get(self.host, self.port, "/api/v1/health", self.token)
        except OSError:
            return False
        return status == 200

    def rss_mb(self) -> float:
        return rss_mb(self.pid)

    def log_tail(self, lines: int = 20) -> str:
        path = self.install.root / "daemon.log"
        try:
            return "\n".join(path.read_text("utf-8", "replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout: float = 40.0) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


# --- a small HTTP/1.1 keep-alive client ------------------------------------------------------


def webhook_request(
    host: str,
    port: int,
    event: str,
    delivery: str,
    body: bytes,
    path: str = "/webhooks/github",
    *,
    close: bool = False,
    secret: str = SECRET,
) -> bytes:
    """The bytes of a signed GitHub delivery (HTTP/1.1), ready to send: keep-alive, or with
    ``Connection: close`` when CLOSE (one connection per delivery, as GitHub sends them);
    signed with SECRET (another secret makes a bad-signature delivery)."""
    from the_loop.github.signature import sign

    head = (
        f"POST {path} HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        "User-Agent: GitHub-Hookshot/bench\r\n"
        "Content-Type: application/json\r\n"
        f"X-GitHub-Event: {event}\r\n"
        f"X-GitHub-Delivery: {delivery}\r\n"
        f"X-Hub-Signature-256: {sign(secret.encode(), body)}\r\n"
        f"Content-Length: {len(body)}\r\n" + ("Connection: close\r\n" if close else "") + "\r\n"
    )
    return head.encode("ascii") + body


def get_request(host: str, port: int, path: str, token: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Bearer {token}\r\n"
        "Accept: application/json\r\n\r\n"
    ).encode("ascii")


_LENGTH_RE = re.compile(rb"\r\ncontent-length:\s*(\d+)", re.IGNORECASE)


def _split_response(buf: bytearray) -> tuple[int, bytes, int] | None:
    """(status, body, consumed) when BUF holds a whole response, else None."""
    end = buf.find(b"\r\n\r\n")
    if end < 0:
        return None
    m = _LENGTH_RE.search(buf, 0, end + 2)
    length = int(m.group(1)) if m else 0
    total = end + 4 + length
    if len(buf) < total:
        return None
    return int(buf[9:12]), bytes(buf[end + 4 : total]), total


class HttpConn:
    """One keep-alive connection on a blocking socket (Nagle off). A connection the server
    closed while idle (uvicorn's keep-alive timeout) is opened again, once, and the request
    sent again: nothing of it had been read by the server."""

    def __init__(self, host: str, port: int, timeout: float = 30.0) -> None:
        self.host, self.port, self.timeout = host, port, timeout
        self.reconnects = 0
        self._open()

    def _open(self) -> None:
        self.sock = socket.create_connection((self.host, self.port), timeout=self.timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = bytearray()

    def request(self, raw: bytes) -> tuple[int, bytes]:
        try:
            return self._exchange(raw)
        except (ConnectionError, BrokenPipeError) as exc:
            if self.buf:
                raise ConnectionError(f"connection lost mid-response: {exc}") from exc
            self.close()
            self._open()
            self.reconnects += 1
            return self._exchange(raw)

    def _exchange(self, raw: bytes) -> tuple[int, bytes]:
        self.sock.sendall(raw)
        while True:
            done = _split_response(self.buf)
            if done is not None:
                status, body, used = done
                del self.buf[:used]
                return status, body
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


class AsyncHttpConn:
    """One keep-alive connection on asyncio streams."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.buf = bytearray()

    @classmethod
    async def open(cls, host: str, port: int) -> AsyncHttpConn:
        reader, writer = await asyncio.open_connection(host, port)
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return cls(reader, writer)

    async def request(self, raw: bytes) -> tuple[int, bytes]:
        self.writer.write(raw)
        while True:
            done = _split_response(self.buf)
            if done is not None:
                status, body, used = done
                del self.buf[:used]
                return status, body
            chunk = await self.reader.read(65536)
            if not chunk:
                raise ConnectionError("the server closed the connection")
            self.buf += chunk

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(Exception):
            await self.writer.wait_closed()


def http_get(host: str, port: int, path: str, token: str) -> tuple[int, bytes]:
    conn = HttpConn(host, port, timeout=5)
    try:
        return conn.request(get_request(host, port, path, token))
    finally:
        conn.close()


def fake_github() -> Any:
    """A ``FakeGitHub`` (not started) with Nagle's algorithm off on its connections.

    ``http.server`` writes a response's headers and body separately and leaves Nagle on, so
    every response with a body waited for the client's delayed ACK (about 40 ms) on loopback:
    a cost of the fake, not of the-loop, which the benchmarks must not measure.
    """
    from tests.fakes import fake_github as module

    module._Handler.disable_nagle_algorithm = True
    return module.FakeGitHub()


# --- fake agent records ----------------------------------------------------------------------


def agent_conversations(agent_dir: Path) -> set[str]:
    return {p.stem for p in agent_dir.glob("*.jsonl")}


def first_start_ts(agent_dir: Path, conversation: str) -> float | None:
    from tests.fakes.fake_agent import read_starts

    starts = read_starts(agent_dir, conversation)
    return starts[0].ts if starts else None


def prompt_ts(agent_dir: Path, conversation: str, marker: str) -> float | None:
    """Arrival time of the first prompt of CONVERSATION containing MARKER."""
    from tests.fakes.fake_agent import read_prompts

    for record in read_prompts(agent_dir, conversation):
        if marker in record.text:
            return record.ts
    return None


# --- SVG plots (hand-written, no dependencies) -----------------------------------------------

_W, _H = 640, 300
_ML, _MR, _MT, _MB = 56, 56, 34, 44


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(ticks, 1)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for mult in (1, 2, 2.5, 5, 10):
        if raw <= mult * mag:
            return mult * mag
    return 10 * mag


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def svg_distribution(
    path: Path,
    title: str,
    values: Sequence[float],
    unit: str = "ms",
    marks: Sequence[tuple[float, str, str]] = (),
    bins: int = 40,
) -> Path:
    """A histogram of VALUES with their CDF on a second axis; MARKS are vertical lines
    (value, label, colour) such as the target and the earlier system's figure."""
    ordered = sorted(values)
    s = summarize(ordered)
    hi_data = percentile(ordered, 99.5) if ordered else 1.0
    hi = max([hi_data, *(m[0] for m in marks)]) * 1.08 or 1.0
    lo = 0.0
    step = _nice_step(hi - lo)
    hi = math.ceil(hi / step) * step
    width = (hi - lo) / bins
    counts = [0] * bins
    clipped = 0
    for v in ordered:
        i = int((v - lo) / width)
        if i >= bins:
            clipped += 1
            i = bins - 1
        counts[max(i, 0)] += 1
    pw, ph = _W - _ML - _MR, _H - _MT - _MB
    top = max(counts) or 1

    def x(v: float) -> float:
        return _ML + (v - lo) / (hi - lo) * pw

    def y(frac: float) -> float:
        return _MT + ph - frac * ph

    out = [_svg_head(title)]
    for i, c in enumerate(counts):
        if c:
            h = c / top * ph
            out.append(
                f'<rect x="{x(lo + i * width):.1f}" y="{_MT + ph - h:.1f}" '
                f'width="{max(pw / bins - 1, 1):.1f}" height="{h:.1f}" fill="#9ecae1"/>'
            )
    if ordered:
        pts = []
        n = len(ordered)
        for i, v in enumerate(ordered):
            if i % max(n // 400, 1) == 0 or i == n - 1:
                pts.append(f"{x(min(v, hi)):.1f},{y((i + 1) / n):.1f}")
        out.append(f'<polyline points="{" ".join(pts)}" fill="none" stroke="#08519c"/>')
    out += _axes(lo, hi, step, unit, pw, ph)
    out.append(
        f'<text x="{_W - _MR + 6}" y="{_MT + 4}" font-size="10" fill="#08519c">100%</text>'
        f'<text x="{_W - _MR + 6}" y="{_MT + ph}" font-size="10" fill="#08519c">0%</text>'
        f'<text x="{_W - _MR + 6}" y="{_MT + ph / 2}" font-size="10" fill="#08519c">CDF</text>'
    )
    all_marks = [
        (s.p50, f"p50 {s.p50:.2f}", "#2ca02c"),
        (s.p99, f"p99 {s.p99:.2f}", "#ff7f0e"),
        *marks,
    ]
    for k, (value, label, colour) in enumerate(all_marks):
        if math.isnan(value):
            continue
        xv = x(min(value, hi))
        out.append(
            f'<line x1="{xv:.1f}" y1="{_MT}" x2="{xv:.1f}" y2="{_MT + ph}" stroke="{colour}" '
            'stroke-dasharray="4 3"/>'
            f'<text x="{xv + 3:.1f}" y="{_MT + 12 + 12 * k}" font-size="10" fill="{colour}">'
            f"{_esc(label)}</text>"
        )
    foot = f"n = {s.n}"
    if clipped:
        foot += f"; {clipped} samples beyond the axis counted in the last bar (max {s.max:.1f})"
    out.append(f'<text x="{_ML}" y="{_H - 6}" font-size="10" fill="#555">{_esc(foot)}</text>')
    out.append("</svg>\n")
    return _write_svg(path, out)


def svg_bars(
    path: Path, title: str, rows: Sequence[tuple[str, float, float | None, float | None]], unit: str
) -> Path:
    """Horizontal bars (label, value, target, earlier): target as a red tick, earlier grey."""
    height = _MT + 26 * len(rows) + 40
    label_w = 190
    pw = _W - label_w - 70
    hi = max([v for r in rows for v in (r[1], r[2], r[3]) if v is not None and not math.isnan(v)])
    hi = hi * 1.1 or 1.0

    def x(v: float) -> float:
        return label_w + v / hi * pw

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height}" '
        f'viewBox="0 0 {_W} {height}" font-family="sans-serif">',
        f'<rect width="{_W}" height="{height}" fill="white"/>',
        f'<text x="{_W / 2}" y="20" font-size="13" text-anchor="middle">{_esc(title)}</text>',
    ]
    for i, (label, value, target, earlier) in enumerate(rows):
        top = _MT + 26 * i
        out.append(
            f'<text x="{label_w - 6}" y="{top + 14}" font-size="11" text-anchor="end">'
            f"{_esc(label)}</text>"
        )
        if not math.isnan(value):
            ok = all(ref is None or value <= ref for ref in (target, earlier))
            colour = "#6baed6" if ok else "#fb6a4a"
            out.append(
                f'<rect x="{label_w}" y="{top + 3}" width="{max(x(value) - label_w, 1):.1f}" '
                f'height="14" fill="{colour}"/>'
                f'<text x="{x(value) + 4:.1f}" y="{top + 14}" font-size="10">'
                f"{_esc(fmt_value(value, unit))}</text>"
            )
        for ref, colour in ((target, "#d62728"), (earlier, "#777777")):
            if ref is not None:
                out.append(
                    f'<line x1="{x(ref):.1f}" y1="{top}" x2="{x(ref):.1f}" y2="{top + 20}" '
                    f'stroke="{colour}" stroke-width="2"/>'
                )
    legend_y = height - 12
    out.append(
        f'<text x="{label_w}" y="{legend_y}" font-size="10" fill="#d62728">| target</text>'
        f'<text x="{label_w + 60}" y="{legend_y}" font-size="10" fill="#777">| earlier '
        "system</text>"
        f'<text x="{label_w + 170}" y="{legend_y}" font-size="10" fill="#555">bars: measured '
        "(red: worse than a line)</text></svg>\n"
    )
    return _write_svg(path, out)


def _svg_head(title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" font-family="sans-serif">'
        f'<rect width="{_W}" height="{_H}" fill="white"/>'
        f'<text x="{_W / 2}" y="20" font-size="13" text-anchor="middle">{_esc(title)}</text>'
    )


def _axes(lo: float, hi: float, step: float, unit: str, pw: float, ph: float) -> list[str]:
    out = [
        f'<line x1="{_ML}" y1="{_MT + ph}" x2="{_ML + pw}" y2="{_MT + ph}" stroke="#333"/>',
        f'<line x1="{_ML}" y1="{_MT}" x2="{_ML}" y2="{_MT + ph}" stroke="#333"/>',
    ]
    v = lo
    while v <= hi + step / 1000:
        xv = _ML + (v - lo) / (hi - lo) * pw
        label = f"{v:g}"
        out.append(
            f'<line x1="{xv:.1f}" y1="{_MT + ph}" x2="{xv:.1f}" y2="{_MT + ph + 4}" stroke="#333"/>'
            f'<text x="{xv:.1f}" y="{_MT + ph + 16}" font-size="10" text-anchor="middle">'
            f"{label}</text>"
        )
        v += step
    out.append(
        f'<text x="{_ML + pw / 2}" y="{_MT + ph + 32}" font-size="11" text-anchor="middle">'
        f"{_esc(unit)}</text>"
        f'<text x="14" y="{_MT + ph / 2}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {_MT + ph / 2})">samples</text>'
    )
    return out


def _write_svg(path: Path, parts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts), encoding="utf-8")
    return path


@contextlib.contextmanager
def step(what: str) -> Iterator[None]:
    started = time.monotonic()
    progress(f"{what} ...")
    yield
    progress(f"{what}: {time.monotonic() - started:.1f} s")
