"""The tmux doorway's vocabulary: constants, the raw result of one tmux invocation, pane
facts, the terminate report, and the pure helpers the runner composes (classification of tmux's
answers, paste commands, input checks, the client environment, signalling by identity)."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from the_loop.config import Config
from the_loop.refs import is_loop_target
from the_loop.runner.base import ProcessIdentity, private_dir, process_identity, still_running
from the_loop.runner.outcomes import Answer, Probe, SpawnResult

_ENV_NAME_RE = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
SOCKET_RE = re.compile(r"\A[A-Za-z0-9._-]{1,64}\Z")
_NOT_FOUND_MARKERS = (
    "can't find session",
    "no such session",
    "session not found",
    "can't find window",
    "can't find pane",
    "no server running on",
    "no current target",  # the server is up but has no session at all
)
_CONTROL_CHARS = re.compile("[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]")
DEAD_MARKER = "the-loop:pane-dead"
LAPSED_MARKER = "the-loop:deadline-passed"
LATE_EXIT = 75
"""How an agent's launcher exits when it started after its deadline (``launcher_command``)."""
NOW_OPTION = "@the_loop_now"
"""A server option holding ``%s``: ``#{T:@the_loop_now}`` is the tmux server's clock, in whole
seconds since the epoch, at the moment a command expands it (``_paste_unless_stopped``)."""
OWNER_VAR = "THE_LOOP_OWNER"
OWNER_OPTION = "@the_loop_owner"
PANE_FORMAT = (
    "#{session_name}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}"
    f"\t#{{{OWNER_OPTION}}}\t#{{pid}}"
)
"""One line per pane: its session, pid, whether dead and how its program ended, its owner, and
the pid of the tmux server (``wake_reaper``)."""
STAGE_FORMAT = f"#{{pane_dead}}\t#{{{OWNER_OPTION}}}"
COMMAND_BUDGET = 12_000
_STATUS_LINES = "#{?#{==:#{status},off},0,1}"
VIEWER_SIZE_FORMAT = f"#{{window_width}} #{{e|+|:#{{window_height}},{_STATUS_LINES}}}"
"""A client size that shows the whole window and its status line (``display-message -p``)."""


READ_ONLY_CLIENT = ("-r", "-f", "ignore-size")
"""How a read-only viewer attaches: it cannot type, and its size never counts for the window."""


def viewer_hooks(columns: int, rows: int) -> list[tuple[str, str]]:
    """The session hooks by which an agent's window follows its interactive viewers: a client
    that attaches or resizes without ``-r`` sizes the window to the smallest interactive
    client attached (``resize-window -a``; read-only clients attach with ``ignore-size`` and
    are left out), less the status line; read-only clients never size it. Once no client at
    all is attached, the window goes back to COLUMNS x ROWS. The window size stays ``manual``
    throughout.

    Nothing here may outlive the hook's own turn of the command queue (decision 0102): tmux
    3.3a crashes, ending every agent, when a command queued for a client runs after that
    client has left. ``run -C``, which could give ``resize-window`` the client's own size as
    a format, runs its commands on the next turn of the server's loop, and a viewer that left
    as it resized (a browser tab closed, a phone turned) brought the server down."""
    follow = "if -F '#{client_readonly}' '' 'resize-window -a'"
    restore = f"if -F '#{{==:#{{session_attached}},0}}' 'resize-window -x {columns} -y {rows}'"
    return [("client-attached", follow), ("client-resized", follow), ("client-detached", restore)]


def record_buffer(target: str) -> str:
    """The tmux buffer that keeps TARGET's last screen once its program has exited
    (``death_hook``); deleted with the session (``kill_session``)."""
    return f"the-loop-record-{target}"


ENDING_OPTION = "@the-loop-ending"
"""The session option ``terminate`` sets on an agent's session once it has kept the agent's
screen (``record_buffer``) and before it signals the agent: from then on that screen is the
agent's record, while its program is still ending."""


def death_hook(target: str, *, keep_screen: bool = True) -> tuple[str, str]:
    """The ``pane-died`` hook of agent session TARGET (decision 0088), run by the tmux server as
    the pane dies, before anything else can happen to it: its screen (colours, and tmux's
    ``Pane is dead`` line) kept in ``record_buffer`` (unless KEEP_SCREEN is False: the-loop
    kept it before ending the agent, ``terminate``), its terminal modes reset (``send-keys -R``;
    the screen moves into its history) and its clients detached. tmux 3.3a exits, ending every
    agent, when it tells a dead pane whose program had asked for focus events that a client
    came or left (decision 0087); reset at its death, a pane no longer asks, whoever watches.

    No command of it may fail: tmux 3.3a keeps a hook's error as a configuration error and
    shows it, in view mode, on the next session created, whose pane then takes pastes into
    that mode. ``detach-client`` fails when no client is attached, so it is asked only then."""
    keep = f"capture-pane -e -b {record_buffer(target)} ; " if keep_screen else ""
    leave = f"if -F '#{{session_attached}}' 'detach-client -s ={target}'"
    return "pane-died", f"{keep}send-keys -R ; {leave}"


LAUNCH_SHELL = "/bin/sh"
"""What runs a launch script (``launcher_command``)."""


class TmuxOutcome(StrEnum):
    """How tmux answered one invocation."""

    OK = "ok"
    NOT_FOUND = "not_found"
    ERROR = "error"
    NO_ANSWER = "no_answer"


@dataclass(frozen=True, slots=True)
class TmuxResult:
    """What one tmux invocation said."""

    outcome: TmuxOutcome
    args: tuple[str, ...]
    returncode: int | None
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.outcome is TmuxOutcome.OK

    @property
    def answered(self) -> bool:
        """False when tmux did not answer at all (timeout, crash, missing binary)."""
        return self.outcome is not TmuxOutcome.NO_ANSWER

    @property
    def not_found(self) -> bool:
        """True when tmux said the session (or the whole server) does not exist."""
        return self.outcome is TmuxOutcome.NOT_FOUND

    @property
    def duplicate(self) -> bool:
        return "duplicate session" in self.stderr

    @property
    def server_lost(self) -> bool:
        """True when the server went away under the command (it exits with its last session)."""
        return self.outcome is TmuxOutcome.NO_ANSWER and "server exited unexpectedly" in self.stderr

    def describe(self) -> str:
        detail = self.stderr.strip() or f"exit status {self.returncode}"
        return f"tmux {self.outcome.value}: {detail}"


@dataclass(frozen=True, slots=True)
class PaneInfo:
    """One pane of a target, as ``list-panes`` reported it."""

    session: str
    pid: int
    dead: bool
    dead_status: int | None
    dead_signal: int | None
    owner: str | None = None
    server: int | None = None
    """The tmux server's pid, as it said in the same answer."""

    @property
    def unreaped(self) -> bool:
        """Its program has ended but tmux has not seen it end (no exit status yet): dead (its
        terminal closed) without a status, or not dead and its process gone or a zombie."""
        if self.dead:
            return self.dead_status is None and self.dead_signal is None
        return process_identity(self.pid) is None


@dataclass(frozen=True, slots=True)
class PaneStatus:
    """The probe of a target and its panes (empty unless live or dead)."""

    probe: Probe
    panes: tuple[PaneInfo, ...]
    detail: str = ""


@dataclass(frozen=True, slots=True)
class TerminateReport:
    """What ``terminate`` did. ``refused`` or ``error`` explain why nothing was signalled."""

    target: str
    probe: Probe
    signalled: tuple[int, ...] = ()
    killed: tuple[int, ...] = ()
    survivors: tuple[int, ...] = ()
    refused: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.refused is None and self.error is None and not self.survivors


def clean_prompt(text: str) -> str:
    """TEXT as it will be delivered: CRLF and CR become LF; other control characters except
    tab are removed (an ESC could end the bracketed paste and turn the rest into keys)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _CONTROL_CHARS.sub("", text)


def parse_panes(output: str, target: str | None) -> tuple[PaneInfo, ...]:
    """The panes of exactly TARGET (None: of every session) in ``list-panes`` OUTPUT."""
    panes: list[PaneInfo] = []
    for line in output.splitlines():
        fields = line.split("\t")
        if len(fields) not in (5, 6, 7) or target not in (None, fields[0]):
            continue
        try:
            pid = int(fields[1])
        except ValueError:
            continue
        status = int(fields[3]) if fields[3].lstrip("-").isdigit() else None
        sig = int(fields[4]) if fields[4].isdigit() else None
        owner = fields[5] or None if len(fields) >= 6 else None
        server = int(fields[6]) if len(fields) == 7 and fields[6].isdigit() else None
        panes.append(PaneInfo(fields[0], pid, fields[2] == "1", status, sig, owner, server))
    return tuple(panes)


def wake_reaper(panes: Sequence[PaneInfo]) -> None:
    """Ask the tmux server to look for its ended children (SIGCHLD) when the program of one of
    PANES has ended unseen (``PaneInfo.unreaped``; decision 0088). Debian's tmux 3.3a misses
    that signal now and then (about one pane death in seven here; tmux issues 311 and 4559):
    it removes the pane's utmp record as the terminal closes, through libutempter, which has
    its own SIGCHLD handler in place meanwhile, so a program that ends in that moment stays a
    zombie, and its ``pane-died`` hook waits, until another child of the server ends.
    Harmless when nothing waits: the server only calls ``waitpid``."""
    for server in {p.server for p in panes if p.unreaped and p.server and p.server > 1}:
        with contextlib.suppress(OSError):
            os.kill(server, signal.SIGCHLD)


def signalable_pids(panes: Sequence[PaneInfo], target: str) -> list[int]:
    """Pids that terminate may signal: live panes of exactly TARGET, pids above 1 only."""
    pids = [p.pid for p in panes if p.session == target and not p.dead and p.pid > 1]
    return sorted(set(pids))


def target_problem(target: str) -> str | None:
    """Why TARGET may not be driven (None: it is a the-loop target)."""
    if is_loop_target(target):
        return None
    return (
        f"refusing tmux target {target!r}: the-loop only drives targets "
        "matching ^loop-[A-Za-z0-9._-]+$"
    )


def submit_gap(seconds: float) -> str:
    """The tmux commands that wait SECONDS between a paste and its CR (nothing for 0): a
    ``run-shell`` holds the rest of the command queue until it ends."""
    return f"run-shell 'sleep {seconds:.3f}' ; " if seconds > 0 else ""


PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"
"""The bracketed-paste markers a terminal puts around a paste for a program that asked."""


def framed(body: str, frame: bool) -> str:
    """BODY (cleaned: no ESC of its own can end the paste early) between the bracketed-paste
    markers when FRAME: a program that reads the markers itself takes it as one paste even
    before it asked the terminal for them (tmux adds them only once it did, and an unframed
    paste is typed: each line submitted on its own, and in Gemini a ``!`` switches to shell
    mode, which runs the rest without asking)."""
    return f"{PASTE_START}{body}{PASTE_END}" if frame else body


def paste_buffer(name: str, target: str, frame: bool) -> str:
    """The tmux command pasting buffer NAME into TARGET: the buffer's own markers when FRAME,
    else tmux's (``-p``: only if the program asked for bracketed paste)."""
    return f"paste-buffer {'' if frame else '-p '}-d -b {name} -t ={target}:"


def _paste_unless_stopped(
    target: str, name: str, gap: float, frame: bool, until: int | None, *, drop: bool
) -> list[str]:
    """Paste buffer NAME, then its CR GAP seconds later, into TARGET in one command queue run,
    only if its pane is alive and, given UNTIL (whole seconds since the epoch), only while the
    tmux server's clock reads less than UNTIL (the clock stored first in ``NOW_OPTION``); else
    print why (``DEAD_MARKER`` or ``LAPSED_MARKER``), deleting the buffers first when DROP."""
    late = f"#{{e|>=:#{{T:{NOW_OPTION}}},{until}}}"
    clock = [] if until is None else ["set-option", "-g", NOW_OPTION, "%s", ";"]
    stop = "#{pane_dead}" if until is None else f"#{{||:#{{pane_dead}},{late}}}"
    said = DEAD_MARKER if until is None else f"#{{?pane_dead,{DEAD_MARKER},{LAPSED_MARKER}}}"
    dropped = f"delete-buffer -b {name} ; delete-buffer -b {name}-cr ; " if drop else ""
    when_alive = (
        f"{paste_buffer(name, target, frame)} ; {submit_gap(gap)}"
        f"paste-buffer -d -b {name}-cr -t ={target}:"
    )
    return [
        *clock,
        "if-shell", "-F", "-t", f"={target}:", stop,
        f"{dropped}display-message -p -t ={target}: '{said}'", when_alive,
    ]  # fmt: skip


def paste_staged_command(
    target: str, name: str, gap: float, frame: bool, until: int | None
) -> list[str]:
    """Paste staged buffer NAME into TARGET (``_paste_unless_stopped``), keeping the buffers
    when nothing is pasted: a deadline read by the server as it pastes, which a caller held up
    (frozen, or not scheduled) between deciding to paste and tmux pasting cannot overrun."""
    return _paste_unless_stopped(target, name, gap, frame, until, drop=False)


def paste_command(
    target: str,
    name: str,
    path: Path,
    gap: float = 0.0,
    frame: bool = False,
    until: int | None = None,
) -> list[str]:
    """Load PATH into buffer NAME and a CR into NAME-cr; paste both into TARGET only if its
    pane is not dead (and, given UNTIL, the server's clock reads less), in the same command
    queue run (pasting into a dead pane crashes tmux), GAP seconds apart (FRAME: PATH holds
    the paste's markers, see ``framed``); else delete them and print why."""
    return [
        "load-buffer", "-b", name, str(path), ";",
        "set-buffer", "-b", f"{name}-cr", "\r", ";",
        *_paste_unless_stopped(target, name, gap, frame, until, drop=True),
    ]  # fmt: skip


_BUFFER_RE = re.compile(r"\A[A-Za-z0-9_.-]{1,100}\Z")


def buffer_problem(name: str) -> str | None:
    return None if _BUFFER_RE.fullmatch(name) else f"invalid tmux buffer name {name!r}"


def empty_problem(body: str) -> str | None:
    return None if body.strip() else "refusing to deliver an empty prompt"


def failure(result: TmuxResult) -> Answer:
    """``no_answer`` when tmux did not answer, else ``failed``."""
    return Answer.FAILED if result.answered else Answer.NO_ANSWER


def spawn_input_problem(
    argv: list[str], cwd: Path, env: dict[str, str]
) -> tuple[Answer, str] | None:
    if not argv or not argv[0]:
        return Answer.REFUSED, "refusing to spawn an empty argv"
    for key in env:
        if not _ENV_NAME_RE.fullmatch(key):
            return Answer.REFUSED, f"invalid environment variable name {key!r}"
    if not Path(cwd).is_dir():
        return Answer.FAILED, f"working directory {cwd} does not exist"
    search_path = env.get("PATH") or os.environ.get("PATH", os.defpath)
    if shutil.which(argv[0], path=search_path) is None:
        return Answer.FAILED, f"harness binary {argv[0]!r} not found or not executable"
    return None


def spawn_failure(target: str, result: TmuxResult) -> SpawnResult:
    if not result.answered:
        detail = f"tmux did not answer while spawning {target}: {result.describe()}"
        return SpawnResult(target=target, answer=Answer.NO_ANSWER, detail=detail)
    if result.duplicate:
        detail = f"tmux target {target} was taken by someone else while spawning"
        return SpawnResult(target=target, answer=Answer.OCCUPIED, detail=detail)
    detail = f"tmux refused to spawn {target}: {result.describe()}"
    return SpawnResult(target=target, answer=Answer.FAILED, detail=detail)


def command_size(args: Sequence[str]) -> int:
    return sum(len(a.encode("utf-8")) + 1 for a in args)


def classify(returncode: int, stderr: str) -> TmuxOutcome:
    if returncode == 0:
        return TmuxOutcome.OK
    lowered = stderr.lower()
    if returncode < 0 or "server exited unexpectedly" in lowered:
        return TmuxOutcome.NO_ANSWER
    if any(marker in lowered for marker in _NOT_FOUND_MARKERS):
        return TmuxOutcome.NOT_FOUND
    if "error connecting to" in lowered and "no such file or directory" in lowered:
        return TmuxOutcome.NOT_FOUND
    return TmuxOutcome.ERROR


def secret_env_names(config: Config) -> tuple[str, ...]:
    """The variables holding the-loop's own secrets (API tokens, webhook and Slack secrets, the
    cluster token), withheld from agents. The GitHub token is withheld only with
    ``github.tokenToAgents: false`` (agents reply on GitHub with it)."""
    names = (
        config.server.token_env,
        config.server.read_only_token_env,
        config.github.webhook.secret_env,
        config.slack.signing_secret_env,
        config.slack.bot_token_env,
        *([config.node.cluster_token_env] if config.node.cluster_token_env else []),
    )
    return names if config.github.token_to_agents else (*names, config.github.token_env)


SHELL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
"""A name ``sh`` can export or unset (an environment may hold others, such as bash's
exported functions)."""


PANE_OWN = ("TERM",)
"""What tmux sets for each pane itself: the terminal the agent draws in is tmux's
(``default-terminal``, ``tmux-256color``), not the one the daemon was started from (``xterm``
draws 16 colours, ``dumb`` or none at all, a service has none)."""
PIPELINE_ENV = ("CI", "CONTINUOUS_INTEGRATION")
"""What tells a program it runs in a CI pipeline, with any ``CI_*`` name. An agent in a pane
runs in a terminal someone may watch (decision 0103): with ``CI`` set, whatever its value,
Claude Code and Gemini draw no colour, and with any of them Gemini skips its interface and
exits."""


def pipeline_names(names: Iterable[str]) -> list[str]:
    """``PIPELINE_ENV`` and the ``CI_*`` names among NAMES: what an agent's launch script
    unsets (the tmux server may hold them from an earlier start) and does not take from the
    process that starts the agent."""
    return sorted({*PIPELINE_ENV, *(name for name in names if name.startswith("CI_"))})


def agent_env(withheld: Collection[str], env: Mapping[str, str]) -> dict[str, str]:
    """An agent's environment as its launch script sets it: that of the process starting it
    (the daemon, or the CLI) as it is now (``client_env``: the-loop's secrets withheld; names
    ``sh`` cannot export left out; ``PANE_OWN`` left to tmux; no ``pipeline_names``), then
    ENV (a harness's own ``CI`` is kept). The tmux server's environment is the one of whoever
    started it, which may be an older run's daemon: a key exported before a restart would not
    reach the agents otherwise."""
    current = client_env(withheld)
    dropped = {*PANE_OWN, *pipeline_names(current)}
    own = {k: v for k, v in current.items() if SHELL_NAME.fullmatch(k) and k not in dropped}
    return {**own, **env}


def stale_names(shown: str, withheld: Collection[str]) -> list[str]:
    """The variables of the tmux server's global environment (SHOWN: ``show-environment -g``)
    that this process's own lacks now: an older run's, or a secret since withheld. Unset in
    each agent's launch script."""
    now = client_env(withheld)
    names = {line.partition("=")[0] for line in shown.splitlines() if "=" in line}
    return sorted(n for n in names if SHELL_NAME.fullmatch(n) and n not in now)


def client_env(withheld: Collection[str] = ()) -> dict[str, str]:
    """The environment of a tmux client: ours without TMUX (no nesting) and without the
    WITHHELD variables — a client that starts the server gives it its environment, which every
    agent pane inherits, so the-loop's own secrets must not be in it."""
    env = dict(os.environ)
    for name in ("TMUX", "TMUX_PANE", *withheld):
        env.pop(name, None)
    return env


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.communicate(timeout=2.0)


def send(identity: ProcessIdentity, sig: signal.Signals) -> bool:
    """Send SIG to IDENTITY if it is still that process and its pid is above 1."""
    if identity.pid <= 1 or not still_running(identity):
        return False
    try:
        os.kill(identity.pid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def wait_gone(identities: Sequence[ProcessIdentity], grace: float) -> list[ProcessIdentity]:
    """Poll until every identity has exited or GRACE elapsed; return those still running."""
    deadline = time.monotonic() + grace
    alive = [i for i in identities if still_running(i)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.02)
        alive = [i for i in alive if still_running(i)]
    return alive


def launcher_command(
    work_dir: Path,
    argv: list[str],
    env: dict[str, str],
    unset: Collection[str] = (),
    until: int | None = None,
) -> list[str]:
    """Argv of a launcher: ``sh`` running a private script (0600, in a 0700 spool) that removes
    itself, unsets UNSET, exports ENV and ``exec``s ARGV (the pane's pid stays the program's).
    Neither the environment's values (an agent's hook token, a harness's API key) nor a long
    argv is then on any command line: ``/proc/<pid>/cmdline`` is readable by every user of the
    host, and the tmux server keeps the command line of the client that started it for its
    whole life. Given UNTIL (whole seconds since the epoch), the script starts nothing once the
    clock reads UNTIL or later: it says so and exits ``LATE_EXIT`` (the pane dies)."""
    spool = private_dir(work_dir / "spool")
    path = spool / f"launch-{uuid.uuid4().hex}.sh"
    lines = [f"rm -f -- {shlex.quote(str(path))}"]
    if until is not None:
        late = f"the-loop: not started: its node's deadline ({until}) had passed"
        lines.append(
            f'[ "$(date +%s)" -lt {until} ] || {{ echo {shlex.quote(late)}; exit {LATE_EXIT}; }}'
        )
    lines += [f"unset {name}" for name in unset if SHELL_NAME.fullmatch(name)]
    lines += [f"export {name}={shlex.quote(value)}" for name, value in env.items()]
    lines.append("exec " + " ".join(shlex.quote(arg) for arg in argv))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write("\n".join(lines) + "\n")
    return [LAUNCH_SHELL, str(path)]
