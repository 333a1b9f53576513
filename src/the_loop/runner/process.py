"""The process (headless) runner: one delivery = one run of the harness's headless argv.

Each run goes to completion in the session's working directory, one at a time per session key
(threads and processes alike), with its stdout appended to the session's transcript file. It
returns a typed result with the exit status and where its output lies in the transcript; the
caller records the event. A run that outlives its timeout is sent SIGTERM (its whole process
group), then SIGKILL after the grace.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from the_loop.errors import BadInput, SpawnFailed
from the_loop.runner.base import KeyedLock, default_work_dir, process_identity


@dataclass(frozen=True, slots=True)
class ProcessResult:
    """One headless run. ``exit_code`` is negative when a signal ended it (``-15``, ``-9``)."""

    key: str
    exit_code: int
    timed_out: bool
    duration: float
    transcript: Path
    output_offset: int
    output_size: int
    stderr_tail: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def output(self) -> str:
        """This run's stdout, read back from the transcript."""
        with self.transcript.open("rb") as handle:
            handle.seek(self.output_offset)
            return handle.read(self.output_size).decode("utf-8", "replace")


class ProcessRunner:
    """Runs headless harness commands to completion, one at a time per session key."""

    def __init__(
        self,
        *,
        work_dir: Path | None = None,
        kill_grace: float = 5.0,
        stderr_tail_bytes: int = 8192,
    ) -> None:
        self.work_dir = (work_dir or default_work_dir()).absolute()
        self.kill_grace = kill_grace
        self.stderr_tail_bytes = stderr_tail_bytes
        self._locks = KeyedLock(self.work_dir / "locks", "process")

    def run(
        self,
        key: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        transcript: Path,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: bytes | None = None,
    ) -> ProcessResult:
        """Run ARGV in CWD with ENV added to the process environment; append its stdout to
        TRANSCRIPT. STDIN, when given, is what the process reads on its standard input (else
        nothing). Runs for one KEY (a session) never overlap. Raises ``SpawnFailed`` when
        the binary or CWD is missing, ``BadInput`` for an empty argv or a bad key."""
        argv = list(argv)
        if not argv or not argv[0]:
            raise BadInput("refusing to run an empty argv")
        full_env = {**os.environ, **(env or {})}
        _check_inputs(argv, cwd, full_env)
        with self._locks.hold(key):
            transcript.parent.mkdir(parents=True, exist_ok=True)
            with (
                transcript.open("ab") as out,
                tempfile.TemporaryFile() as err,
                _stdin_file(stdin) as source,
            ):
                offset = out.tell()
                started = time.monotonic()
                code, timed_out = self._start(argv, cwd, full_env, out, err, timeout, source)
                duration = time.monotonic() - started
                size = out.tell() - offset
                tail = _tail(err, self.stderr_tail_bytes)
        return ProcessResult(key, code, timed_out, duration, transcript, offset, size, tail)

    def _start(
        self,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        out: IO[bytes],
        err: IO[bytes],
        timeout: float | None,
        source: IO[bytes] | None,
    ) -> tuple[int, bool]:
        try:
            proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL if source is None else source,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
        except OSError as exc:
            raise SpawnFailed(f"cannot start {argv[0]!r}: {exc}") from None
        try:
            return proc.wait(timeout=timeout), False
        except subprocess.TimeoutExpired:
            return self._stop(proc), True
        except BaseException:
            self._stop(proc)
            raise

    def _stop(self, proc: subprocess.Popen[bytes]) -> int:
        """SIGTERM the run's process group, SIGKILL what is left of it after the grace; return
        the run's status once the whole group is gone (or the grace ran out twice)."""
        deadline = time.monotonic() + self.kill_grace
        _signal_group(proc, signal.SIGTERM)
        try:
            code = proc.wait(timeout=self.kill_grace)
        except subprocess.TimeoutExpired:
            _signal_group(proc, signal.SIGKILL)
            code = proc.wait()
        if not _group_gone(proc.pid, deadline):
            _signal_group(proc, signal.SIGKILL)
            _group_gone(proc.pid, time.monotonic() + 1.0)
        return code


def _check_inputs(argv: list[str], cwd: Path, env: Mapping[str, str]) -> None:
    if not Path(cwd).is_dir():
        raise SpawnFailed(f"working directory {cwd} does not exist")
    if shutil.which(argv[0], path=env.get("PATH", os.defpath)) is None:
        raise SpawnFailed(f"harness binary {argv[0]!r} not found or not executable")


def _group_gone(pgid: int, deadline: float) -> bool:
    """Poll until no process of group PGID is left running, or DEADLINE; True when gone."""
    while True:
        members = [pid for pid in _group_members(pgid) if process_identity(pid) is not None]
        if not members:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def _group_members(pgid: int) -> list[int]:
    """Pids whose process group is PGID (from /proc; empty where /proc is missing)."""
    found = []
    for entry in Path("/proc").iterdir() if Path("/proc/self/stat").exists() else ():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[2] == str(pgid):
            found.append(int(entry.name))
    return found


def _signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    if proc.pid <= 1:
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, sig)


@contextlib.contextmanager
def _stdin_file(data: bytes | None) -> Iterator[IO[bytes] | None]:
    """DATA in a temporary file for a run's stdin (a file, not a pipe: never blocks the
    writer); None without DATA (the run's stdin is then /dev/null)."""
    if data is None:
        yield None
        return
    with tempfile.TemporaryFile() as source:
        source.write(data)
        source.seek(0)
        yield source


def _tail(stream: IO[bytes], limit: int) -> str:
    size = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, size - limit))
    return stream.read().decode("utf-8", "replace")
