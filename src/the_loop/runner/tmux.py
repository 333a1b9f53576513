"""The tmux runner: the only code that runs tmux.

Long because it is that one doorway: every tmux command the-loop sends is built and answered
here, each with the facts below in mind.

Every call goes through ``TmuxRunner.run``, which always names the private server
(``tmux -L <socket> -f <config file>``), never raises and returns a ``TmuxResult`` saying
whether tmux answered, answered "no such session", or did not answer at all (timeout, crash,
missing binary). Targets are always addressed exactly (``=name`` for a session, ``=name:`` for
its window and pane): tmux matches prefixes otherwise, and ``loop-x-1`` would find
``loop-x-10``.

Facts this module is built around (tmux 3.3a):

- pasting into a dead pane (``remain-on-exit``) crashes the whole tmux server, so a delivery
  checks ``#{pane_dead}`` and pastes in the same command queue run (``if-shell -F``), where no
  pane can die in between;
- one tmux command may be at most about 16 KB long ("command too long"), and its argv is
  readable by every local user, so every spawn hands the agent's argv and environment to the
  pane through a private file and a tiny launcher that ``exec``s it (the pane pid stays the
  harness's pid);
- ``new-session`` runs a single-element command through ``sh -c``; the launcher is two
  (``sh <script>``), and the script quotes every word of the argv, so no argv is read by a
  shell;
- a pane's environment is the tmux server's, which is the one of whoever started the server
  (maybe an older run's daemon), so the launch script sets the environment of the process that
  starts the agent (the daemon, or the CLI) as it is now and unsets what the server holds
  beyond it; it leaves ``TERM`` to tmux and unsets the CI variables (``agent_env``,
  ``pipeline_names``: decision 0103);
- a server whose last session was killed exits, and a command sent meanwhile gets "server
  exited unexpectedly"; queries and ``new-session`` ask once more after that answer (a server
  that went away holds no session, so asking again is safe) instead of reporting ``unknown``;
- the server is started with ``-f /dev/null``: a user's ``~/.tmux.conf`` could otherwise set
  ``destroy-unattached``, ``default-command`` or ``remain-on-exit off`` under the agents.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path

from the_loop.config import Config
from the_loop.errors import BadInput, LoopError
from the_loop.refs import is_loop_target
from the_loop.runner import tmux_screens as screens
from the_loop.runner.base import (
    KeyedLock,
    default_work_dir,
    private_dir,
    process_identity,
)
from the_loop.runner.outcomes import Answer as Answer
from the_loop.runner.outcomes import AttachCommand as AttachCommand
from the_loop.runner.outcomes import BufferState as BufferState
from the_loop.runner.outcomes import Capture as Capture
from the_loop.runner.outcomes import Delivery as Delivery
from the_loop.runner.outcomes import Killed as Killed
from the_loop.runner.outcomes import Owner as Owner
from the_loop.runner.outcomes import Probe as Probe
from the_loop.runner.outcomes import SpawnResult as SpawnResult
from the_loop.runner.outcomes import Staged as Staged
from the_loop.runner.tmux_core import COMMAND_BUDGET as COMMAND_BUDGET
from the_loop.runner.tmux_core import DEAD_MARKER as DEAD_MARKER
from the_loop.runner.tmux_core import (
    ENDING_OPTION,
    LAPSED_MARKER,
    READ_ONLY_CLIENT,
    VIEWER_SIZE_FORMAT,
    agent_env,
    death_hook,
    framed,
    paste_staged_command,
    pipeline_names,
    record_buffer,
    stale_names,
    viewer_hooks,
)
from the_loop.runner.tmux_core import OWNER_OPTION as OWNER_OPTION
from the_loop.runner.tmux_core import OWNER_VAR as OWNER_VAR
from the_loop.runner.tmux_core import PANE_FORMAT as PANE_FORMAT
from the_loop.runner.tmux_core import SOCKET_RE as SOCKET_RE
from the_loop.runner.tmux_core import STAGE_FORMAT as STAGE_FORMAT
from the_loop.runner.tmux_core import PaneInfo as PaneInfo
from the_loop.runner.tmux_core import PaneStatus as PaneStatus
from the_loop.runner.tmux_core import TerminateReport as TerminateReport
from the_loop.runner.tmux_core import TmuxOutcome as TmuxOutcome
from the_loop.runner.tmux_core import TmuxResult as TmuxResult
from the_loop.runner.tmux_core import buffer_problem as buffer_problem
from the_loop.runner.tmux_core import classify as classify
from the_loop.runner.tmux_core import clean_prompt as clean_prompt
from the_loop.runner.tmux_core import client_env as client_env
from the_loop.runner.tmux_core import command_size as command_size
from the_loop.runner.tmux_core import empty_problem as empty_problem
from the_loop.runner.tmux_core import failure as failure
from the_loop.runner.tmux_core import kill_group as kill_group
from the_loop.runner.tmux_core import launcher_command as launcher_command
from the_loop.runner.tmux_core import parse_panes as parse_panes
from the_loop.runner.tmux_core import paste_command as paste_command
from the_loop.runner.tmux_core import secret_env_names as secret_env_names
from the_loop.runner.tmux_core import send as send
from the_loop.runner.tmux_core import signalable_pids as signalable_pids
from the_loop.runner.tmux_core import spawn_failure as spawn_failure
from the_loop.runner.tmux_core import spawn_input_problem as spawn_input_problem
from the_loop.runner.tmux_core import target_problem as target_problem
from the_loop.runner.tmux_core import wait_gone as wait_gone
from the_loop.runner.tmux_core import wake_reaper as wake_reaper


class TmuxRunner:
    """Runs agents in tmux sessions on a private server (``tmux -L SOCKET``)."""

    def __init__(
        self,
        socket: str = "the-loop",
        *,
        binary: str = "tmux",
        timeout: float = 10.0,
        columns: int = 200,
        rows: int = 50,
        work_dir: Path | None = None,
        remain_on_exit: bool = True,
        config_file: str = "/dev/null",
        withheld_env: Collection[str] = (),
    ) -> None:
        if not SOCKET_RE.match(socket):
            raise BadInput(f"invalid tmux socket name {socket!r}")
        self.socket = socket
        self.binary = binary
        self.timeout = timeout
        self.columns = columns
        self.rows = rows
        self.work_dir = (work_dir or default_work_dir()).absolute()
        self.remain_on_exit = remain_on_exit
        self.config_file = config_file
        self.withheld_env = tuple(withheld_env)
        self._locks = KeyedLock(self.work_dir / "locks", f"tmux-{socket}")
        self._stale: list[str] | None = None

    @classmethod
    def from_config(cls, config: Config, work_dir: Path | None = None) -> TmuxRunner:
        """A runner for CONFIG's socket and window size; locks live under the state dir."""
        return cls(
            config.tmux.socket,
            columns=config.tmux.columns,
            rows=config.tmux.rows,
            remain_on_exit=config.tmux.remain_on_exit,
            work_dir=work_dir or config.state_path / "run",
            withheld_env=secret_env_names(config),
        )

    # -- the doorway -------------------------------------------------------------------------

    def base_argv(self) -> list[str]:
        """``tmux -L SOCKET -f CONFIG``: the prefix of every tmux command the-loop runs."""
        argv = [self.binary, "-L", self.socket]
        if self.config_file:
            argv += ["-f", self.config_file]
        return argv

    def run(self, *args: str, timeout: float | None = None) -> TmuxResult:
        """Run one tmux command line on the private server (counted); never raises."""
        argv, screens.Tally.commands = [*self.base_argv(), *args], screens.Tally.commands + 1
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=client_env(self.withheld_env), start_new_session=True,
            )  # fmt: skip
        except OSError as exc:
            return TmuxResult(TmuxOutcome.NO_ANSWER, tuple(args), None, "", str(exc))
        try:
            out, err = proc.communicate(timeout=self.timeout if timeout is None else timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            return TmuxResult(
                TmuxOutcome.NO_ANSWER, tuple(args), None, "", "tmux did not answer in time"
            )
        stdout = out.decode("utf-8", "replace")
        stderr = err.decode("utf-8", "replace")
        return TmuxResult(
            classify(proc.returncode, stderr), tuple(args), proc.returncode, stdout, stderr
        )

    def ask(self, *args: str) -> TmuxResult:
        """``run`` for commands that change nothing: asked once more when the server went away
        under the first attempt (the second answer is the truth: no server, no session)."""
        result = self.run(*args)
        return self.run(*args) if result.server_lost else result

    # -- queries -----------------------------------------------------------------------------

    def server_running(self) -> bool | None:
        """Whether this runner's tmux server is running; None when tmux did not answer."""
        found = self.ask("list-sessions", "-F", "#{session_name}")
        if found.ok:
            return True
        if found.not_found and "no server running" in found.stderr:
            return False
        return None

    def version(self) -> TmuxResult:
        """``tmux -V``: the version line in ``stdout`` when ``ok``; never raises."""
        return self.run("-V", timeout=5.0)

    def pane_status(self, target: str) -> PaneStatus:
        """Probe TARGET and list its panes; never raises."""
        result = self.ask("list-panes", "-s", "-t", f"={target}:", "-F", PANE_FORMAT)
        if result.not_found:
            return PaneStatus(Probe.ABSENT, ())
        if not result.ok:
            return PaneStatus(Probe.UNKNOWN, (), result.describe())
        panes = parse_panes(result.stdout, target)
        if not panes:
            return PaneStatus(Probe.UNKNOWN, (), f"tmux listed no pane of {target}")
        wake_reaper(panes)
        live = any(not p.dead and process_identity(p.pid) is not None for p in panes)
        return PaneStatus(Probe.LIVE if live else Probe.DEAD, panes)

    def probe(self, target: str) -> Probe:
        """``live``, ``dead``, ``absent`` or ``unknown``; never raises."""
        return self.pane_status(target).probe

    def list_targets(self) -> list[str] | None:
        """Names of the sessions on the private server; None when tmux did not answer."""
        result = self.ask("list-sessions", "-F", "#{session_name}")
        if result.not_found:
            return []
        if not result.ok:
            return None
        return [line for line in result.stdout.splitlines() if line]

    def viewer_size(self, target: str) -> tuple[int, int] | None:
        """(columns, rows) of a client that shows TARGET's whole window and its status line,
        no more; None when unknown."""
        result = self.ask("display-message", "-p", "-t", f"={target}:", VIEWER_SIZE_FORMAT)
        parts = result.stdout.split()
        if not result.ok or len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        return int(parts[0]), int(parts[1])

    def window_size(self, target: str) -> tuple[int, int] | None:
        """(columns, rows) of TARGET's window; None when unknown."""
        result = self.ask(
            "display-message", "-p", "-t", f"={target}:", "#{window_width} #{window_height}"
        )
        parts = result.stdout.split()
        if not result.ok or len(parts) != 2 or not all(p.isdigit() for p in parts):
            return None
        return int(parts[0]), int(parts[1])

    def capture(self, target: str, lines: int | None = 200, *, escapes: bool = False) -> Capture:
        """The last LINES lines of TARGET's pane (None: the whole history), wrapped lines
        joined; ``absent`` when there is no such target, ``no_answer``/``failed`` when tmux
        could not say. Never raises."""
        result = self.ask(*screens.capture_args(target, lines, escapes=escapes))
        return screens.captured(target, lines, result, self.socket)

    def live_capture(self, target: str, lines: int, *, escapes: bool = False) -> Capture:
        """``capture`` of TARGET's pane while its program runs, in the same tmux invocation
        that says so: ``dead`` once the program has exited, whose kept last screen shows what
        it showed then, not what it takes now. Never raises."""
        head = ["display-message", "-p", "-t", f"={target}:", "#{pane_dead}", ";"]
        result = self.ask(*head, *screens.capture_args(target, lines, escapes=escapes))
        if result.ok:
            dead, _, rest = result.stdout.partition("\n")
            if dead.strip() == "1":
                return Capture(target=target, answer=Answer.DEAD, detail=f"{target} has exited")
            result = dataclasses.replace(result, stdout=rest)
        return screens.captured(target, lines, result, self.socket)

    def last_screen(self, target: str, *, escapes: bool = False) -> Capture:
        """TARGET's screen row by row as its program left it (wrapped lines not joined: what a
        client showing it drew), with the escapes of its colours when ESCAPES: the one kept at
        its end (``death_hook``, ``terminate``), else the pane's visible screen (a session
        spawned before the-loop kept records). For a dead pane. Never raises."""
        kept = self.ask("show-buffer", "-b", record_buffer(target))
        if kept.ok:
            text = kept.stdout if escapes else screens.without_colours(kept.stdout)
            return Capture(target=target, text=screens.screen_text(text, None))
        args = ["capture-pane", "-p", *(["-e"] if escapes else []), "-t", f"={target}:"]
        return screens.captured(target, None, self.ask(*args), self.socket)

    def ending(self, target: str) -> bool:
        """True when the-loop has kept TARGET's screen and signalled its program to end
        (``terminate``, ``ENDING_OPTION``): that screen is its record even before the pane
        dies. False when not, or when tmux did not say. Never raises."""
        found = self.ask("show-options", "-qv", "-t", f"={target}:", ENDING_OPTION)
        return found.ok and found.stdout.strip() == "on"

    def capture_many(self, targets: Sequence[str], lines: int | None = 200) -> dict[str, Capture]:
        """``capture`` of each of TARGETS, in as few tmux invocations as fit
        (``tmux_screens``). Never raises."""
        return screens.capture_many(self.ask, self.capture, targets, lines)

    def attach_command(self, target: str, *, read_only: bool = True) -> AttachCommand:
        """``tmux -L SOCKET attach-session [-r -f ignore-size] -t =TARGET`` and an env without
        ``TMUX`` (tmux refuses to nest otherwise), for the caller to run. A read-only client's
        size never counts for the agent's window (``viewer_hooks``). ``refused``: not the-loop's."""
        problem = target_problem(target)
        if problem is not None:
            return AttachCommand(target=target, answer=Answer.REFUSED, detail=problem)
        argv = [*self.base_argv(), "attach-session"]
        if read_only:
            argv += READ_ONLY_CLIENT
        argv += ["-t", f"={target}"]
        return AttachCommand(target=target, argv=tuple(argv), env=client_env(self.withheld_env))

    def inspect_command(self, target: str) -> str:
        """A shell command a person can run to look at TARGET read-only."""
        argv = [*self.base_argv(), "attach-session", *READ_ONLY_CLIENT, "-t", f"={target}"]
        return shlex.join(argv)

    # -- readiness ---------------------------------------------------------------------------

    def wait_ready(
        self,
        target: str,
        pattern: str | None = None,
        timeout: float = 30.0,
        interval: float = 0.05,
        stop: threading.Event | None = None,
    ) -> bool:
        """Wait until TARGET's screen matches PATTERN (a regex; None: any visible text) while
        its pane is alive. False on timeout, when the pane died or vanished, or once STOP is
        set; never raises."""
        regex = re.compile(pattern) if pattern else None
        deadline = time.monotonic() + timeout
        stop = stop or threading.Event()
        while not stop.is_set():
            screen = self._screen_if_alive(target)
            if screen is False:
                return False
            if isinstance(screen, str) and (regex.search(screen) if regex else screen.strip()):
                return True
            if time.monotonic() >= deadline:
                return False
            stop.wait(interval)
        return False

    def _screen_if_alive(self, target: str) -> str | bool | None:
        """The visible screen when the pane is alive, False when it is dead or absent, None
        when tmux did not answer."""
        capture = ["capture-pane", "-p", "-J", "-t", f"={target}:"]
        dead = ["display-message", "-p", "-t", f"={target}:", "#{pane_dead}"]
        result = self.ask(*capture, ";", *dead)
        if result.not_found:
            return False
        if not result.ok:
            return None
        screen, _, flag = result.stdout.rstrip("\n").rpartition("\n")
        return False if flag.strip() == "1" else screen

    # -- spawn -------------------------------------------------------------------------------

    def spawn(
        self,
        target: str,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        owner: str | None = None,
        until: int | None = None,
    ) -> SpawnResult:
        """Start ARGV in a new tmux session TARGET in CWD with ENV added to this process's own
        environment (the daemon's, or the CLI's; ``agent_env``: the-loop's secrets withheld).

        OWNER, when given, is recorded on the tmux session (``THE_LOOP_OWNER``) in the same tmux
        invocation, so ``owner_of`` can later prove the session is the one we started. UNTIL,
        when given (whole seconds since the epoch), is when it is too late for ARGV to start:
        checked as the pane starts (``launcher_command``), which then dies at once.

        ``new-session`` is tried first (a taken name changes nothing). When tmux answers
        "duplicate session", the name is looked at: a live occupant is never killed or spawned
        over (``Refused`` naming ``the-loop sessions attach`` and the tmux command to inspect
        it); a dead occupant is cleared and the clearing verified, then ``new-session`` is tried
        again (twice at most). Answers ``occupied`` for a live occupant, ``no_answer`` when tmux
        does not answer, ``failed`` when it refuses or the binary or CWD is missing, ``refused``
        for bad input. Never raises.
        """
        argv, env = list(argv), dict(env or {})
        refusal = target_problem(target)
        problem = (Answer.REFUSED, refusal) if refusal else spawn_input_problem(argv, cwd, env)
        if problem is not None:
            return SpawnResult(target=target, answer=problem[0], detail=problem[1])
        cleared = False
        with self._locks.hold(target):
            for attempt in (1, 2, 3):
                if attempt > 1:
                    room = self._make_room(target)
                    if isinstance(room, SpawnResult):
                        return room
                    cleared = room or cleared
                result = self._new_session(target, argv, cwd, env, owner, until)
                if result.ok:
                    pid = result.stdout.strip().splitlines()[0] if result.stdout.strip() else ""
                    return SpawnResult(
                        target=target,
                        pane_pid=int(pid) if pid.isdigit() else None,
                        cleared_dead=cleared,
                        via_launcher=True,
                    )
                if not ((result.duplicate or result.server_lost) and attempt < 3):
                    return spawn_failure(target, result)
        raise AssertionError("unreachable")

    def _make_room(self, target: str) -> bool | SpawnResult:
        """True when a dead occupant was cleared, False when the name was free; a failed
        ``SpawnResult`` when the name is not free."""
        probe = self.probe(target)
        if probe is Probe.ABSENT:
            return False
        if probe is Probe.LIVE:
            return SpawnResult(
                target=target, answer=Answer.OCCUPIED, detail=self.occupied_message(target)
            )
        if probe is Probe.UNKNOWN:
            detail = f"tmux did not answer about {target}; not spawning"
            return SpawnResult(target=target, answer=Answer.NO_ANSWER, detail=detail)
        self.run(*_reset_then_kill(target))
        after = self.probe(target)
        if after is not Probe.ABSENT:
            detail = f"could not clear the dead tmux session {target} (now {after})"
            return SpawnResult(target=target, answer=Answer.NO_ANSWER, detail=detail)
        return True

    def occupied_message(self, target: str) -> str:
        """What to tell a person about a live program in TARGET that the-loop must not touch."""
        return (
            f"tmux target {target} is occupied by a live program; it is never killed or "
            f"spawned over. Look at it with `the-loop sessions attach` or "
            f"`{self.inspect_command(target)}`"
        )

    def _new_session(
        self,
        target: str,
        argv: list[str],
        cwd: Path,
        env: dict[str, str],
        owner: str | None,
        until: int | None,
    ) -> TmuxResult:
        # the environment and the argv go through a private launch script, never on tmux's
        # command line (``launcher_command``: command lines are readable by every local user);
        # it sets this process's environment as it is now (``agent_env``)
        launch = agent_env(self.withheld_env, env)
        unset = sorted({*self._stale_names(), *pipeline_names(os.environ)})
        command = launcher_command(self.work_dir, argv, launch, unset, until)
        head = ["new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", target, "-c", str(cwd)]
        size = ["-x", str(self.columns), "-y", str(self.rows)]
        args = [*head, *size, "--", *command, *self._session_options(target)]
        if owner is not None:
            args += [";", "set-environment", "-t", f"={target}", OWNER_VAR, owner]
            args += [";", "set-option", "-t", f"={target}:", OWNER_OPTION, owner]
        result = self.run(*args)
        if not result.ok:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(command[-1])
        return result

    def _stale_names(self) -> list[str]:
        """The variables an agent's launch script unsets (``stale_names``): asked of the tmux
        server once per runner, before its first spawn (a server this runner starts has this
        process's environment, and nothing of the-loop changes it after)."""
        if self._stale is None:
            shown = self.run("show-environment", "-g")
            self._stale = stale_names(shown.stdout, self.withheld_env) if shown.ok else []
        return self._stale

    def _session_options(self, target: str) -> list[str]:
        """Options chained after ``new-session`` in the same invocation, so they hold before
        the agent can exit or a viewer attach: remain-on-exit and the hook that makes the dead
        pane safe and keeps its screen (``death_hook``), ``window-size manual`` and the hooks
        by which the window follows its interactive viewer (``viewer_hooks``), and no status
        line: a viewer sees the agent's screen and nothing of tmux's (decision 0108)."""
        window = [("remain-on-exit", "on")] if self.remain_on_exit else []
        window.append(("window-size", "manual"))
        hooks = viewer_hooks(self.columns, self.rows)
        if self.remain_on_exit:
            hooks.append(death_hook(target))
        out = [";", "set-option", "-t", f"={target}:", "status", "off"]
        for name, value in window:
            out += [";", "set-option", "-w", "-t", f"={target}:", name, value]
        for hook, command in hooks:
            out += [";", "set-hook", "-t", f"={target}:", hook, command]
        return out

    # -- deliver -----------------------------------------------------------------------------

    def deliver(
        self,
        target: str,
        text: str,
        gap: float = 0.0,
        frame: bool = False,
        until: int | None = None,
    ) -> Delivery:
        """Paste TEXT into TARGET's pane (bracketed: by tmux once the program asked, or always
        by its own markers when FRAME, see ``framed``) and submit it with a carriage return
        (GAP seconds later, for programs that take an Enter right after a paste as a new line).

        The text goes through a uniquely named tmux buffer loaded from a private file; the
        pane's liveness is checked in the same tmux command run as the paste (and UNTIL, when
        given: ``paste_staged``). Deliveries to one target are strictly ordered (threads and
        processes). Answers ``absent`` or ``dead`` when nothing can take it, ``lapsed`` when
        UNTIL had come, ``no_answer``/``failed`` when tmux could not, ``refused`` for an empty
        prompt or a foreign target. Never raises.
        """
        body = clean_prompt(text)
        problem = target_problem(target) or empty_problem(body)
        if problem is not None:
            return Delivery(target=target, answer=Answer.REFUSED, detail=problem)
        with self._locks.hold(target), self._prompt_file(framed(body, frame)) as path:
            name = f"the-loop-{uuid.uuid4().hex}"
            result = self.run(*paste_command(target, name, path, gap, frame, until))
            if not result.ok:
                self.run("delete-buffer", "-b", name, ";", "delete-buffer", "-b", f"{name}-cr")
        return self._delivery(target, body, result)

    def owner_of(self, target: str) -> str | None:
        """The owner recorded on TARGET at spawn (``spawn(owner=...)``); None when absent,
        unset or tmux did not answer."""
        return self.ownership(target).owner

    def ownership(self, target: str) -> Owner:
        """The owner mark of TARGET: ``ok`` with ``owner`` (None when unset), ``absent``, or
        ``no_answer``/``failed``. Never raises."""
        result = self.run("show-environment", "-t", f"={target}", OWNER_VAR)
        if result.not_found:
            return Owner(target=target, answer=Answer.ABSENT, detail=f"no tmux session {target}")
        if not result.ok:
            if result.answered and "unknown variable" in result.stderr.lower():
                return Owner(target=target)
            return Owner(target=target, answer=failure(result), detail=result.describe())
        _, sep, value = result.stdout.strip().partition("=")
        return Owner(target=target, owner=value if sep else None)

    def stage(self, target: str, text: str, name: str, frame: bool = False) -> Staged:
        """Load TEXT (between the paste's markers when FRAME, see ``framed``) into buffer NAME
        (and a CR into NAME-cr) without pasting it; ``ok`` when
        TARGET's pane was alive just after, asked in the same tmux command (``dead`` or
        ``absent``: the buffers possibly loaded all the same).

        With ``paste_staged`` this is a two-phase delivery: a caller that records "staged"
        between the two can tell after a crash whether the paste happened (the buffer is
        deleted by the paste). Never raises.
        """
        body = clean_prompt(text)
        problem = target_problem(target) or buffer_problem(name) or empty_problem(body)
        if problem is not None:
            return Staged(target=target, answer=Answer.REFUSED, detail=problem)
        with self._locks.hold(target), self._prompt_file(framed(body, frame)) as path:
            result = self.run(
                "load-buffer", "-b", name, str(path), ";",
                "set-buffer", "-b", f"{name}-cr", "\r", ";",
                "display-message", "-p", "-t", f"={target}:", STAGE_FORMAT,
            )  # fmt: skip
        if result.not_found:
            return Staged(target=target, answer=Answer.ABSENT, detail=f"no tmux session {target}")
        if not result.ok:
            detail = f"staging a prompt for {target} failed: {result.describe()}"
            return Staged(target=target, answer=failure(result), detail=detail)
        dead, _, owner = result.stdout.rstrip("\n").partition("\t")
        if dead.strip() != "0":
            detail = f"the agent in {target} has exited (its pane is dead)"
            return Staged(target=target, answer=Answer.DEAD, detail=detail)
        return Staged(target=target, owner=owner.strip() or None)

    def paste_staged(
        self,
        target: str,
        name: str,
        gap: float = 0.0,
        frame: bool = False,
        until: int | None = None,
    ) -> Delivery:
        """Paste buffer NAME (bracketed: by its own markers when FRAME, staged so, else by
        tmux; then its CR GAP seconds later) into TARGET if the pane is alive, deleting the
        buffers, in one tmux command. ``absent`` or ``dead`` when nothing can take it, and
        ``lapsed`` when UNTIL (whole seconds since the epoch) had come by the tmux server's
        clock as it ran the command (``paste_staged_command``); buffers kept. Never raises."""
        problem = target_problem(target) or buffer_problem(name)
        if problem is not None:
            return Delivery(target=target, answer=Answer.REFUSED, detail=problem)
        with self._locks.hold(target):
            result = self.run(*paste_staged_command(target, name, gap, frame, until))
        return self._delivery(target, "", result)

    def has_buffer(self, name: str) -> BufferState:
        """Whether buffer NAME exists (``ok`` with ``exists``), or ``no_answer``/``failed``
        when tmux could not say. Never raises."""
        problem = buffer_problem(name)
        if problem is not None:
            return BufferState(target=name, answer=Answer.REFUSED, detail=problem)
        result = self.run("list-buffers", "-F", "#{buffer_name}")
        if result.not_found:
            return BufferState(target=name, exists=False)
        if not result.ok:
            return BufferState(target=name, answer=failure(result), detail=result.describe())
        return BufferState(target=name, exists=name in result.stdout.split())

    def _delivery(self, target: str, body: str, result: TmuxResult) -> Delivery:
        if result.not_found:
            detail = f"tmux session {target} does not exist"
            return Delivery(target=target, answer=Answer.ABSENT, detail=detail)
        if not result.ok:
            detail = f"delivery to {target} failed: {result.describe()}"
            return Delivery(target=target, answer=failure(result), detail=detail)
        if DEAD_MARKER in result.stdout:
            detail = f"the agent in {target} has exited (its pane is dead)"
            return Delivery(target=target, answer=Answer.DEAD, detail=detail)
        if LAPSED_MARKER in result.stdout:
            detail = f"not pasted into {target}: its deadline had passed when tmux ran it"
            return Delivery(target=target, answer=Answer.LAPSED, detail=detail)
        return Delivery(target=target, chars=len(body))

    @contextlib.contextmanager
    def _prompt_file(self, body: str) -> Iterator[Path]:
        spool = private_dir(self.work_dir / "spool")
        path = spool / f"prompt-{uuid.uuid4().hex}.txt"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(body.encode("utf-8"))
            yield path
        finally:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()

    # -- stop --------------------------------------------------------------------------------

    def terminate(
        self, target: str, grace: float = 5.0, *, owner: str | None = None
    ) -> TerminateReport:
        """Terminate the harness in TARGET; returns what was signalled; never raises.

        Only targets matching ``^loop-[A-Za-z0-9._-]+$``; with OWNER, only a target whose live
        panes carry that ownership mark (read in the same ``list-panes``; anything else is
        ``refused``, untouched). Re-asserts ``remain-on-exit`` so the
        pane stays as a dead record and detaches its clients (decision 0087), sends SIGTERM to
        every live pane pid of exactly TARGET
        (pids <= 1 dropped), waits up to GRACE seconds in small steps, then SIGKILLs the
        survivors that are still the same processes.
        """
        if not is_loop_target(target):
            return TerminateReport(
                target, Probe.UNKNOWN, refused=f"{target!r} is not a the-loop target"
            )
        try:
            with self._locks.hold(target):
                return self._terminate(target, grace, owner)
        except (OSError, LoopError) as exc:  # the lock directory: a report, never an exception
            return TerminateReport(target, Probe.UNKNOWN, error=f"terminate failed: {exc}")

    def _terminate(self, target: str, grace: float, owner: str | None) -> TerminateReport:
        status = self.pane_status(target)
        if status.probe is Probe.UNKNOWN:
            return TerminateReport(target, status.probe, error=status.detail or "tmux unknown")
        foreign = [p for p in status.panes if not p.dead and p.owner != owner]
        if owner is not None and status.probe is Probe.LIVE and foreign:
            return TerminateReport(target, status.probe, refused=self.occupied_message(target))
        keep = ["set-option", "-w", "-t", f"={target}:", "remain-on-exit", "on"]
        if status.probe is Probe.LIVE:
            # the record is the screen the agent showed when it was ended (an agent may clear
            # it as it exits), so the death hook does not keep another; its viewers leave while
            # the pane is alive (decisions 0087, 0088)
            hook, reset = death_hook(target, keep_screen=False)
            keep += [";", "capture-pane", "-e", "-b", record_buffer(target), "-t", f"={target}:"]
            keep += [";", "set-hook", "-t", f"={target}:", hook, reset]
            keep += [";", "set-option", "-t", f"={target}:", ENDING_OPTION, "on"]
            keep += [";", "detach-client", "-s", f"={target}"]
        self.run(*keep)
        found = [process_identity(pid) for pid in signalable_pids(status.panes, target)]
        victims = [ident for ident in found if ident is not None]
        signalled = [i for i in victims if send(i, signal.SIGTERM)]
        survivors = wait_gone(signalled, grace)
        killed = [i for i in survivors if send(i, signal.SIGKILL)]
        left = wait_gone(killed, 2.0)
        return TerminateReport(
            target,
            status.probe,
            signalled=tuple(i.pid for i in signalled),
            killed=tuple(i.pid for i in killed),
            survivors=tuple(i.pid for i in left),
        )

    def kill_session(self, target: str) -> Killed:
        """Kill tmux session TARGET (exactly); ``probe`` is the state afterwards (``absent``
        when it is gone). ``refused`` for targets that are not the-loop's. Never raises."""
        problem = target_problem(target)
        if problem is not None:
            return Killed(target=target, answer=Answer.REFUSED, detail=problem)
        with self._locks.hold(target):
            self.run(*_reset_then_kill(target))
            probe = self.probe(target)
        if probe is Probe.UNKNOWN:
            return Killed(
                target=target, answer=Answer.NO_ANSWER, probe=probe, detail="tmux unknown"
            )
        return Killed(target=target, probe=probe)

    def kill_server(self) -> TmuxResult:
        """Kill the private server (every target on this socket); for tests and teardown."""
        return self.run("kill-server")


def _reset_then_kill(target: str) -> list[str]:
    """Kill tmux session TARGET, its pane's terminal modes reset first (``send-keys -R``: a
    session spawned before the death hook, ``death_hook``): a client still attached to a dead
    pane whose program had asked for focus events is told it lost focus as the session goes,
    which tmux 3.3a writes into the dead pane and exits (decision 0087). The pane is about to
    go, so nothing of it is lost; its kept screen goes with it (the buffer's deletion comes
    last: it fails when none was kept)."""
    kill = ["send-keys", "-R", "-t", f"={target}:", ";", "kill-session", "-t", f"={target}"]
    return [*kill, ";", "delete-buffer", "-b", record_buffer(target)]
