"""Standing session definitions and the results of the standing verbs.

A definition is **declared** (an entry of ``standing.sessions``) or **created** at runtime (a
record in the database). ``definition`` resolves a name the same way for every verb (declared
first, else created), so where a definition came from never changes what a verb does. Harness,
args and cwd inherit when omitted: the harness from ``routing.defaultHarness``, args from that
harness's configuration (an explicit ``[]`` means none), the cwd is ``<stateDir>/standing/NAME``.
"""

from __future__ import annotations

import getpass
import re
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from the_loop.agent.attention.service import SessionAttention
from the_loop.config import BUILTIN_HARNESSES, StandingSessionConfig
from the_loop.context import Ctx
from the_loop.errors import BadInput, NotFound, NotRunning, ValidationFailed
from the_loop.harness import configured_adapter
from the_loop.refs import safe_session_id, standing_target, validate_standing_name
from the_loop.runner import TerminateReport
from the_loop.store import standing as store
from the_loop.store.standing import StandingRecord, StandingSource, StandingStatus
from the_loop.store.usage import Usage
from the_loop.wire import UtcDatetime, Wire


class StartKind(StrEnum):
    started = "started"
    resumed = "resumed"
    already_running = "already-running"
    failed = "failed"


class StopKind(StrEnum):
    stopped = "stopped"
    already_stopped = "already-stopped"
    failed = "failed"


class ViewStatus(StrEnum):
    """``running``: a live pane the-loop started; ``suspended``: idle, its harness stopped
    (the next ``say`` resumes it); ``over-budget``: stopped by a budget until ``standing
    extend``; ``stopped``: not live, a conversation is recorded to resume; ``absent``: not
    live and nothing to resume (never started)."""

    running = "running"
    suspended = "suspended"
    over_budget = "over-budget"
    stopped = "stopped"
    absent = "absent"


class Result(Wire):
    """Base of the service's results: camelCase, ISO times in JSON."""


class Definition(Result):
    """A resolved definition. ``key`` is the config key of a declared one (``standing.
    sessions[i]``) or ``created``; ``problems`` lists why it cannot be used (empty: usable)."""

    name: str
    source: StandingSource
    key: str
    harness: str
    args: list[str] | None
    cwd: Path
    default_cwd: bool
    brief: str
    description: str
    auto_start: bool
    problems: list[str] = []

    @property
    def target(self) -> str:
        return standing_target(self.name)

    def require_valid(self) -> Definition:
        """SELF, or ``ValidationFailed`` (exit 2) listing the problems."""
        if not self.problems:
            return self
        where = f"fix {self.key} in the config; " if self.source is StandingSource.declared else ""
        raise ValidationFailed(
            f"standing session {self.name} cannot be used ({where}"
            f"`the-loop standing stop {self.name}` still works)",
            list(self.problems),
        )


class StartOutcome(Result):
    name: str
    outcome: StartKind
    target: str
    conversation_id: str | None = None
    error: str | None = None


class StopOutcome(Result):
    name: str
    outcome: StopKind
    target: str
    signalled: list[int] = []
    killed: list[int] = []
    error: str | None = None


class SayResult(Result):
    name: str
    target: str
    actor: str
    chars: int
    conversation_id: str | None = None
    held: str | None = None
    """Why the message waits in the queue instead (a dialog the agent shows), None when it was
    delivered."""
    detail: str = ""
    """What happened, for a person: delivered (with the length of the text they sent), or
    what it waits behind and when it is delivered."""


class CreateResult(Result):
    definition: Definition
    start: StartOutcome | None = None


class DeleteResult(Result):
    name: str
    stop: StopOutcome


class StandingExtended(Result):
    """What ``standing extend`` did: the allowance now, the budget still reached (so still
    held), the start that resumed it (when it was lifted while running), its usage."""

    name: str
    extra_usd: float
    extra_turns: int
    over_budget: str | None = None
    resumed: StartOutcome | None = None
    usage: Usage


class StandingView(Result):
    """One line of ``list``."""

    name: str
    source: StandingSource
    status: ViewStatus
    harness: str
    args: list[str] | None = None
    cwd: str
    target: str
    description: str
    auto_start: bool
    conversation_id: str | None = None
    started_at: UtcDatetime | None = None
    last_message_at: UtcDatetime | None = None
    problems: list[str] = []
    note: str | None = None
    attention: SessionAttention | None = None
    usage: Usage | None = None
    hold: str | None = None
    """``suspended`` or ``over-budget`` (the spend policy stopped it), else None."""
    node: str | None = None
    """On a shared database, the node it is pinned to (None: unpinned, or not shared)."""


ACTOR_RE = re.compile(r"\A[^\x00-\x1f\x7f]{1,100}\Z")


def speaker(actor: str | None) -> str:
    """Who a ``say`` names: ACTOR (one line), else the user running it."""
    who = (actor if actor is not None else getpass.getuser()).strip()
    if not ACTOR_RE.match(who):
        raise BadInput(f"invalid actor {actor!r}: one line of at most 100 characters")
    return who


# --- the resolver ---------------------------------------------------------------------------


def definition(ctx: Ctx, name: str) -> Definition:
    """Resolve NAME: the declared entry first, else the created record.

    Raises ``BadInput`` for an invalid name and ``NotFound`` when NAME is neither declared nor
    created. Never raises for an unusable definition: its ``problems`` say why (see
    ``Definition.require_valid``).
    """
    validate_standing_name(name)
    found = declared_entry(ctx, name)
    if found is not None:
        return from_declared(ctx, *found)
    rec = store.get(ctx.db.connect(), name)
    if rec is not None and rec.source is StandingSource.created:
        return from_record(ctx, rec)
    raise NotFound(
        f"no standing session {name}: it is neither declared (standing.sessions) nor created "
        f"(`the-loop standing create {name}`)"
    )


def declared_entry(ctx: Ctx, name: str) -> tuple[int, StandingSessionConfig] | None:
    for index, entry in enumerate(ctx.config.standing.sessions):
        if entry.name == name:
            return index, entry
    return None


def _config_relative(ctx: Ctx, path: Path) -> Path:
    """PATH with ``~`` expanded, relative to the config file's directory."""
    path = path.expanduser()
    if path.is_absolute():
        return path
    base = ctx.loaded.path.parent if ctx.loaded.path is not None else Path.cwd()
    return (base / path).absolute()


@dataclass(frozen=True, slots=True)
class _Raw:
    """A definition as written: None harness, args or cwd mean "inherit"."""

    name: str
    source: StandingSource
    key: str
    harness: str | None
    args: list[str] | None
    cwd: Path | None
    brief: str
    description: str
    auto_start: bool
    problems: tuple[str, ...] = ()


def from_declared(ctx: Ctx, index: int, entry: StandingSessionConfig) -> Definition:
    key = f"standing.sessions[{index}]"
    brief, problems = entry.prompt or "", []
    if entry.prompt_file is not None:
        path = _config_relative(ctx, entry.prompt_file)
        try:
            brief = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(f"{key}.promptFile: cannot read {path}: {reason(exc)}")
    cwd = _config_relative(ctx, entry.cwd) if entry.cwd is not None else None
    raw = _Raw(
        entry.name,
        StandingSource.declared,
        key,
        entry.harness,
        entry.args,
        cwd,
        brief,
        entry.description,
        entry.auto_start,
        tuple(problems),
    )
    return _build(ctx, raw)


def from_record(ctx: Ctx, rec: StandingRecord) -> Definition:
    problems: tuple[str, ...] = ()
    if rec.source is StandingSource.declared:
        problems = (f"{rec.name} is no longer declared in the config",)
    raw = _Raw(
        rec.name,
        rec.source,
        "created",
        rec.harness,
        rec.args,
        Path(rec.cwd) if rec.cwd else None,
        rec.prompt,
        rec.description,
        rec.auto_start,
        problems,
    )
    return _build(ctx, raw)


def _not_a_directory(path: Path) -> str | None:
    """Why PATH is no directory to work in (None when it is one)."""
    try:
        if path.is_dir():
            return None
    except OSError as exc:  # is_dir() raises for a name too long, a directory it may not read
        shown = str(path) if len(str(path)) <= 80 else f"{str(path)[:80]}…"
        return f"{shown} cannot be used: {exc.strerror or exc}"
    return f"{path} is not a directory"


def _build(ctx: Ctx, raw: _Raw) -> Definition:
    """Apply the inheritance rules to RAW and list every reason it cannot be used."""
    prefix = f"{raw.key}." if raw.source is StandingSource.declared else ""
    harness = raw.harness or ctx.config.routing.default_harness
    problems = [*raw.problems, *_harness_problems(ctx, harness, raw.args, prefix)]
    if raw.cwd is not None and (why := _not_a_directory(raw.cwd)) is not None:
        problems.append(f"{prefix}cwd: {why}")
    return Definition(
        name=raw.name,
        source=raw.source,
        key=raw.key,
        harness=harness,
        args=None if raw.args is None else list(raw.args),
        cwd=raw.cwd if raw.cwd is not None else default_cwd(ctx, raw.name),
        default_cwd=raw.cwd is None,
        brief=raw.brief,
        description=raw.description,
        auto_start=raw.auto_start,
        problems=problems,
    )


def _harness_problems(ctx: Ctx, harness: str, args: list[str] | None, prefix: str) -> list[str]:
    known = set(BUILTIN_HARNESSES) | set(ctx.config.harnesses)
    if harness not in known:
        return [f"{prefix}harness: {harness!r} is not a known harness ({', '.join(sorted(known))})"]
    try:
        configured_adapter(ctx.config, harness, args).check_runner("tmux")
    except BadInput as exc:
        return [f"{prefix}harness: {exc.message}"]
    return []


def default_cwd(ctx: Ctx, name: str) -> Path:
    """The working directory of a standing session that names none."""
    return ctx.state_dir / "standing" / validate_standing_name(name)


def reason(exc: BaseException) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


# --- records ---------------------------------------------------------------------------------


def new_record(
    name: str,
    harness: str | None,
    args: list[str] | None,
    cwd: Path | None,
    prompt: str | None,
    prompt_file: Path | None,
    description: str,
    auto_start: bool,
) -> StandingRecord:
    if prompt is not None and prompt_file is not None:
        raise BadInput("give --prompt or --prompt-file, not both")
    brief = prompt or ""
    if prompt_file is not None:
        path = prompt_file.expanduser().absolute()
        try:
            brief = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"cannot read the prompt file {path}: {reason(exc)}") from None
    return StandingRecord(
        name=name,
        source=StandingSource.created,
        harness=harness or None,
        args=None if args is None else list(args),
        cwd=str(cwd.expanduser().absolute()) if cwd is not None else None,
        prompt=brief,
        description=description,
        auto_start=auto_start,
        status=StandingStatus.stopped,
        created_at=time.time(),
    )


def snapshot(defn: Definition) -> dict[str, Any]:
    return {
        "harness": defn.harness,
        "args": defn.args,
        "cwd": str(defn.cwd),
        "prompt": defn.brief,
        "description": defn.description,
        "auto_start": defn.auto_start,
    }


def declared_record(defn: Definition, conversation: str, node: str | None) -> StandingRecord:
    return StandingRecord(
        name=defn.name,
        source=StandingSource.declared,
        conversation_id=conversation,
        status=StandingStatus.running,
        created_at=time.time(),
        node=node,
        **snapshot(defn),
    )


def resumable(rec: StandingRecord | None) -> str | None:
    """REC's conversation id when there is one that is safe to put in an argv."""
    if rec is None or not rec.conversation_id:
        return None
    try:
        return safe_session_id(rec.conversation_id)
    except BadInput:
        return None


def terminate_problem(report: TerminateReport) -> str | None:
    """Why stopping failed (REPORT of the harness's termination), or None."""
    if report.refused or report.error:
        return report.refused or report.error
    if report.survivors:
        return f"pids {list(report.survivors)} survived SIGKILL"
    return None


def not_running(name: str) -> NotRunning:
    """The error for a verb that needs standing session NAME running."""
    return NotRunning(
        f"standing session {name} is not running; start it with `the-loop standing start {name}`"
    )
