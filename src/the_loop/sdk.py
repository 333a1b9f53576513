"""The Python SDK: ``TheLoop`` calls the same service functions as the CLI, in this process.

No HTTP is involved: each method is one service call on the installation's state directory,
so it works whether or not the daemon runs (they share the state through SQLite and the
per-name locks). Errors are the one exception tree (``the_loop.errors.LoopError``).
``TheLoop.mount`` serves the REST routes and MCP from the caller's FastAPI app.

Importing this module does not import the web stack; ``mount`` does.
"""

from __future__ import annotations

import builtins
import contextlib
import getpass
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from the_loop import events as ev
from the_loop.agent.attention import service as attention_service
from the_loop.agent.spend import usage
from the_loop.config import Config, LoadedConfig, load_config
from the_loop.config.errors import problems_word, validation_problems
from the_loop.context import Ctx, open_ctx
from the_loop.errors import BadInput, ConfigInvalid, LoopError
from the_loop.standing import service as standing_service
from the_loop.views import doctor
from the_loop.views import sessions as views
from the_loop.views.doctor import DoctorReport
from the_loop.work_items import SessionRecord, SessionStatus, spend
from the_loop.work_items import service as sessions_service
from the_loop.work_items.records import SessionSummary
from the_loop.work_items.start import Started, start_session

if TYPE_CHECKING:
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse

    from the_loop.web.mcp import McpEndpoint

PathLike = str | os.PathLike[str]


class Sessions:
    """Work-item sessions; a session is named by its id or by ``github:OWNER/REPO#N`` (its live
    session, else its latest)."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx

    def list(
        self, status: SessionStatus | str | None = None, limit: int | None = 100
    ) -> builtins.list[SessionSummary]:
        """Sessions with their attention, newest first."""
        try:
            wanted = SessionStatus(status) if status is not None else None
        except ValueError:
            raise BadInput(
                f"invalid status {status!r}: queued, active, paused, orphaned or closed"
            ) from None
        return sessions_service.list_sessions(self._ctx, wanted, limit)

    def start(
        self, ref: str, prompt: str, harness: str | None = None, actor: str | None = None
    ) -> Started:
        """Start the session of work item REF (``github:OWNER/REPO#N`` or ``local:NAME``) with
        PROMPT as its instruction, or deliver PROMPT into its live session, as ``the-loop
        sessions start`` does. HARNESS (default ``routing.defaultHarness``) applies to a new
        session; ACTOR (default: the OS user) is on whose behalf the agent works."""
        return start_session(self._ctx, ref, prompt, harness, actor)

    def get(self, session: str) -> views.SessionView:
        """One session with its pane state and delivered-prompt count, as ``GET
        /sessions/{id}`` answers it; ``NotFound`` when there is none."""
        return views.session_view(self._ctx, session)

    def say(self, session: str, text: str, actor: str | None = None) -> str:
        """Deliver TEXT into the live session; returns what happened (``NotRunning`` when it is
        closed, ``BadInput`` for blank text). ACTOR defaults to the OS user."""
        return sessions_service.say(self._ctx, session, text, actor)

    def close(self, session: str, kill_tmux: bool | None = None) -> SessionRecord:
        """Close the session (its screen is kept unless KILL_TMUX; None: the config's choice)."""
        return sessions_service.close_by_operator(self._ctx, session, kill_tmux)

    def restart(self, session: str) -> str:
        """Stop the live session's agent and start it again, resuming its conversation, with
        this process's environment as it is now; then deliver what waits. What happened."""
        return sessions_service.restart_by_operator(self._ctx, session)

    def pause(self, session: str) -> SessionRecord:
        """Stop delivering events to the session (they are dropped, not queued)."""
        return sessions_service.pause_by_operator(self._ctx, session, True)

    def resume(self, session: str) -> SessionRecord:
        """Deliver events again (nothing dropped is replayed)."""
        return sessions_service.pause_by_operator(self._ctx, session, False)

    def screen(self, session: str, lines: int = 200) -> str:
        """The last LINES lines of the session's screen (its transcript when headless)."""
        return views.session_screen(self._ctx, session, lines).text

    def extend(self, session: str, usd: float = 0.0, turns: int = 0) -> spend.Extended:
        """Raise the session's budget by USD and TURNS; one stopped over budget resumes its
        conversation and gets what was kept (``the-loop sessions extend``)."""
        return spend.extend(self._ctx, session, usd, turns)


class Standing:
    """Standing sessions: declared in the config or created at runtime."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx

    def list(self) -> builtins.list[standing_service.StandingView]:
        """Declared (config order) then created (by name), with their status."""
        return standing_service.list_standing(self._ctx)

    def get(self, name: str) -> standing_service.StandingView:
        """One standing session; ``NotFound`` when there is none."""
        return views.standing_view(self._ctx, name)

    def create(
        self,
        name: str,
        *,
        harness: str | None = None,
        args: Sequence[str] | None = None,
        cwd: PathLike | None = None,
        prompt: str | None = None,
        prompt_file: PathLike | None = None,
        description: str = "",
        auto_start: bool = True,
        start: bool = True,
    ) -> standing_service.CreateResult:
        """Create (and, unless not START, start) a standing session; see
        ``the_loop.standing.service.create`` for the refusals."""
        return standing_service.create(
            self._ctx,
            name,
            harness=harness,
            args=list(args) if args is not None else None,
            cwd=Path(cwd) if cwd is not None else None,
            prompt=prompt,
            prompt_file=Path(prompt_file) if prompt_file is not None else None,
            description=description,
            auto_start=auto_start,
            start_now=start,
        )

    def delete(self, name: str) -> standing_service.DeleteResult:
        """Stop and remove a created standing session (``Conflict`` for a declared one)."""
        return standing_service.delete(self._ctx, name)

    def start(self, name: str) -> standing_service.StartOutcome:
        """Start NAME, resuming its conversation when there is one."""
        return standing_service.start(self._ctx, name)[0]

    def stop(self, name: str) -> standing_service.StopOutcome:
        """Stop NAME: terminate the agent, then kill its tmux session."""
        return standing_service.stop(self._ctx, name)[0]

    def restart(self, name: str) -> standing_service.StartOutcome:
        """Stop NAME, then start it again (resuming)."""
        return standing_service.restart(self._ctx, name)

    def say(self, name: str, text: str, actor: str | None = None) -> standing_service.SayResult:
        """Deliver TEXT into the running session; never starts it (``NotRunning``), but a
        suspended one is resumed; ``Conflict`` while it is over budget."""
        return standing_service.say(self._ctx, name, text, actor)

    def extend(
        self, name: str, usd: float = 0.0, turns: int = 0
    ) -> standing_service.StandingExtended:
        """Raise NAME's budget; one stopped over budget resumes (``standing extend``)."""
        return standing_service.extend(self._ctx, name, usd, turns)


class Attention:
    """Which agents wait for a person, and the answers to them. An answer names its prompt by
    id (``the-loop attention`` and every notice show it), is taken only while that prompt is
    pending, and the first one wins: the rules of ``the-loop allow|deny|answer``, recorded
    ``via sdk``."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx

    def list(self) -> builtins.list[attention_service.AttentionView]:
        """Every live session waiting on a person, oldest first (``the-loop attention``)."""
        return attention_service.list_attention(self._ctx)

    def explain(self, session: str) -> attention_service.AttentionView:
        """SESSION's attention with the signal and rule that decided it."""
        return attention_service.explain(self._ctx, session)

    def history(
        self, session: str, limit: int = 100
    ) -> builtins.list[attention_service.PromptView]:
        """SESSION's prompts, newest first, and who answered each, how and from where."""
        return attention_service.history(self._ctx, session, limit)

    def allow(self, prompt: str, actor: str | None = None) -> attention_service.Answered:
        """Allow the tool PROMPT (its id) asks to run. ACTOR defaults to the OS user."""
        return self._permit(prompt, "allow", actor)

    def deny(self, prompt: str, actor: str | None = None) -> attention_service.Answered:
        """Refuse the tool PROMPT (its id) asks to run. ACTOR defaults to the OS user."""
        return self._permit(prompt, "deny", actor)

    def answer(
        self,
        prompt: str,
        choice: int | None = None,
        text: str | None = None,
        actor: str | None = None,
    ) -> attention_service.QuestionAnswered:
        """Answer the question PROMPT (its id) with the number of a CHOICE or a typed TEXT."""
        agent, prompt_id = self._asker(prompt)
        return attention_service.answer_question(
            self._ctx,
            agent,
            actor or getpass.getuser(),
            "sdk",
            choice=choice,
            text=text,
            prompt_id=prompt_id,
        )

    def _permit(
        self, prompt: str, decision: attention_service.Decision, actor: str | None
    ) -> attention_service.Answered:
        agent, prompt_id = self._asker(prompt)
        return attention_service.answer_permission(
            self._ctx, agent, decision, actor or getpass.getuser(), "sdk", prompt_id
        )

    def _asker(self, prompt: str) -> tuple[str, str]:
        agent, _, prompt_id = attention_service.asker_of(self._ctx, prompt)
        return agent, prompt_id


class Events:
    """The event log."""

    def __init__(self, ctx: Ctx) -> None:
        self._ctx = ctx

    def query(
        self,
        types: Sequence[str] = (),
        work_item: str | None = None,
        standing: str | None = None,
        level: str = "debug",
        since: str | None = None,
        limit: int | None = 50,
    ) -> builtins.list[ev.Event]:
        """The newest LIMIT events matching every filter given, oldest first; TYPES are globs
        (``session.*``)."""
        flt = ev.parse_filter(types, work_item, standing, level, since, limit)
        return ev.query(self._ctx.db, flt)

    def types(self) -> builtins.list[ev.EventSpec]:
        """The event catalogue, by name."""
        return sorted(ev.CATALOGUE.values(), key=lambda spec: spec.name)


class TheLoop:
    """One installation of the-loop, driven in-process.

    ``TheLoop()`` reads the config the CLI would (``$THE_LOOP_CONFIG``, ``./the-loop.yaml``,
    ``~/.config/the-loop/config.yaml``, else defaults); CONFIG_PATH names a file; CONFIG is a
    ``Config`` or a mapping validated into one (camelCase keys, as in the file). Giving both is
    ``BadInput``; an invalid config is ``ConfigInvalid`` listing every problem. The config is
    read once.
    """

    def __init__(
        self,
        config_path: PathLike | None = None,
        config: Config | Mapping[str, Any] | None = None,
    ) -> None:
        self.ctx: Ctx = open_ctx(loaded=_loaded(config_path, config))
        self.sessions = Sessions(self.ctx)
        self.standing = Standing(self.ctx)
        self.attention = Attention(self.ctx)
        self.events = Events(self.ctx)

    @property
    def config(self) -> Config:
        return self.ctx.config

    def usage(self, work_item: str | None = None, days: int = 7) -> usage.UsageReport:
        """Tokens, turns and estimated cost of WORK_ITEM and of the newest DAYS days
        (``the-loop usage``, ``GET /api/v1/usage``)."""
        return usage.report(self.ctx, work_item, days)

    def doctor(self) -> DoctorReport:
        """The doctor's checks (tmux, git, harnesses, state dir, port), as ``the-loop doctor``."""
        return doctor.run_doctor(self.ctx.config)

    def mount(
        self,
        app: FastAPI,
        prefix: str = "/the-loop",
        dependencies: Sequence[Any] = (),
        *,
        mcp: bool = True,
        lifespan: bool = True,
    ) -> McpEndpoint | None:
        """Serve the REST routes at ``PREFIX/api/v1`` and MCP at ``PREFIX/mcp`` from APP.

        DEPENDENCIES (``fastapi.Depends(...)``) guard every route, reads and writes alike,
        instead of the daemon's tokens; they must not read the request body. Errors of
        the-loop's tree answer ``{"error": {"code", "message"}}`` unless APP handles
        ``LoopError`` already. MCP needs its session manager running: with LIFESPAN the APP's
        lifespan is extended to run it; otherwise enter ``(returned endpoint).running()``
        yourself. Call before APP starts serving. Returns the MCP endpoint (None without MCP).
        """
        # lazy: start-up (the web stack loads only for mount, see the module's docstring)
        from the_loop.web.api import build_router
        from the_loop.web.mcp import McpEndpoint, build_server
        from the_loop.web.mcp_door import mcp_router

        base = _prefix(prefix)
        guards = list(dependencies)
        router = build_router(lambda: self.ctx, guards, guards)
        app.include_router(router, prefix=f"{base}/api/v1")
        _handle_loop_errors(app)
        if not mcp:
            return None
        endpoint = McpEndpoint(build_server(lambda: self.ctx))
        app.include_router(mcp_router(endpoint.handle, guards), prefix=base)
        if lifespan:
            _run_in_lifespan(app, endpoint)
        return endpoint

    def close(self) -> None:
        """Close this thread's database connection."""
        self.ctx.db.close()


def _loaded(
    config_path: PathLike | None, config: Config | Mapping[str, Any] | None
) -> LoadedConfig:
    if config_path is not None and config is not None:
        raise BadInput("give config_path or config, not both")
    if config is None:
        return load_config(Path(config_path) if config_path is not None else None)
    if isinstance(config, Config):
        return LoadedConfig(config, None)
    try:
        return LoadedConfig(Config.model_validate(dict(config)), None)
    except ValidationError as exc:
        problems = validation_problems(exc, None, Config, dict(config))
        raise ConfigInvalid(
            f"the config is invalid ({problems_word(len(problems))})", problems
        ) from None


def _prefix(prefix: str) -> str:
    if prefix and (not prefix.startswith("/") or prefix.endswith("/")):
        raise BadInput(f"invalid prefix {prefix!r}: empty, or /like/this (no trailing /)")
    return prefix


def _handle_loop_errors(app: FastAPI) -> None:
    if LoopError in app.exception_handlers:
        return
    # lazy: start-up (the web stack loads only for mount)
    from fastapi.responses import JSONResponse

    from the_loop.web.app import error_body

    async def loop_error(_: Request, exc: Exception) -> JSONResponse:
        err = exc if isinstance(exc, LoopError) else LoopError(str(exc))
        return JSONResponse(error_body(err.code, err.message), status_code=err.status)

    app.add_exception_handler(LoopError, loop_error)


def _run_in_lifespan(app: FastAPI, endpoint: McpEndpoint) -> None:
    outer = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(owner: Any) -> AsyncIterator[Any]:
        async with outer(owner) as state, endpoint.running():
            yield state

    app.router.lifespan_context = lifespan
