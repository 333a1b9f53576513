"""The ``AgentRunner`` protocol and its two implementations: tmux (interactive) and process
(headless). ``runner_for`` picks one by the agent's runner kind; nothing else branches on it.

A runner launches the harness (fresh or resuming), delivers one queued prompt exactly once,
tells whether a resumed agent stays alive, probes, and reads the screen. It raises the
project's errors (``NotRunning``, ``Refused``, ``Unavailable``, ``SpawnFailed``) translated from
the doorway's typed outcomes.
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from the_loop import events as ev
from the_loop.agent import confine, submit
from the_loop.agent import node as nodes
from the_loop.agent.attention.spawn import keep_previous_token, spawn_env
from the_loop.agent.model import Agent, AgentKind
from the_loop.agent.spend import transcripts
from the_loop.agent.spend.meter import HEADLESS_OUTPUT
from the_loop.errors import NotRunning, Refused, Unavailable
from the_loop.faults import crash_point, pause_point
from the_loop.harness import (
    HarnessAdapter,
    LaunchSpec,
    RunnerKind,
    configured_adapter,
    with_located_binary,
)
from the_loop.runner import Answer, Probe
from the_loop.store import attention
from the_loop.store import prompts as queue
from the_loop.store.prompts import PromptStatus, QueuedPrompt

if TYPE_CHECKING:
    from collections.abc import Callable

    from the_loop.context import Ctx

READY_TIMEOUT = 60.0


class AgentRunner(Protocol):
    """How agents run under one runner kind."""

    kind: RunnerKind
    takes_first_prompt: bool
    """True when a start consumes its first prompt itself (a headless run); False when the
    first prompt stays queued and is delivered like any other (tmux: never through argv)."""

    def launch(
        self, ctx: Ctx, agent: Agent, prompt: str | None, session_id: str | None, *, resume: bool
    ) -> str | None:
        """Start the harness; returns the conversation id it runs (chosen or learned)."""
        ...

    def deliver(
        self, ctx: Ctx, agent: Agent, item: QueuedPrompt, revive: Callable[[], None] | None
    ) -> None:
        """Deliver one queued prompt exactly once (the caller records it delivered)."""
        ...

    def stays_alive(self, ctx: Ctx, agent: Agent, seconds: float) -> bool: ...

    def probe(self, ctx: Ctx, agent: Agent) -> str: ...

    def screen(self, ctx: Ctx, agent: Agent, lines: int) -> str: ...


def adapter_for(ctx: Ctx, harness: str, args: list[str] | None = None) -> HarnessAdapter:
    """The adapter of HARNESS; ARGS, when given, replace the configured extra argv."""
    return configured_adapter(ctx.config, harness, args)


def transcript_path(ctx: Ctx, agent: Agent) -> Path:
    return ctx.state_dir / HEADLESS_OUTPUT / f"{agent.key}.jsonl"


def _spec(
    ctx: Ctx, adapter: HarnessAdapter, agent: Agent, session_id: str | None, prompt: str | None
) -> LaunchSpec:
    prompt_file = None
    if adapter.wants_prompt_file and prompt is not None:
        spool = ctx.state_dir / "prompts"
        spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        prompt_file = spool / f"{uuid.uuid4().hex}.txt"
        prompt_file.write_text(prompt, encoding="utf-8")
    return LaunchSpec(cwd=agent.cwd, session_id=session_id, prompt=prompt, prompt_file=prompt_file)


def _buffer_name(agent: Agent, seq: int) -> str:
    token = agent.key[:13].replace(":", "-")
    return f"tl-{token}-{seq}"


def pasteable(ctx: Ctx, agent: Agent, item: QueuedPrompt) -> str:
    """ITEM's text as the agent's harness takes a paste (``harnesses.<h>.multiline``): as it
    is (bracketed paste), its lines joined into one, or one line naming a private file that
    holds it (written once per prompt, so a re-staged prompt names the same file)."""
    mode = ctx.config.harness(agent.harness).multiline
    if mode == "paste" or "\n" not in item.text.strip("\n"):
        return item.text
    if mode == "join":
        return " / ".join(line for line in item.text.splitlines() if line.strip())
    spool = ctx.state_dir / "messages"
    spool.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = spool / f"{agent.key.replace(':', '-')}-{item.seq}.txt"
    if not path.exists():
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(item.text)
    return f"A message from the-loop is in {path} - read that file and act on it."


def _taken(ctx: Ctx, agent: Agent) -> Callable[[], bool]:
    """Whether AGENT's harness reported taking a prompt (or asking a person) since now: what
    is pasted next left its input box (``agent.submit``)."""
    since = time.time()
    return lambda: attention.took_input_since(ctx.db.connect(), agent.key, since)


def _watched(ctx: Ctx, agent: Agent, watched: submit.Watched) -> None:
    """Report (``session.unsent``) a pasted message that stayed in AGENT's input box: Enter
    pressed again, or the message not seen to leave the box."""
    if watched.left and not watched.enters:
        return
    level = None if watched.left else ev.Level.warning
    ev.emit(ctx.db, "session.unsent", source="agent", level=level, **agent.event_names,
            enters=watched.enters, left=watched.left)  # fmt: skip


def _mark(ctx: Ctx, seq: int, status: PromptStatus) -> None:
    with ctx.db.transaction() as tx:
        queue.mark(tx, seq, status)


class TmuxAgents:
    """Interactive agents in tmux targets on the private server."""

    kind: RunnerKind = "tmux"
    takes_first_prompt = False

    def launch(
        self, ctx: Ctx, agent: Agent, prompt: str | None, session_id: str | None, *, resume: bool
    ) -> str | None:
        """Spawn the harness in the agent's target, owned by the agent, with no prompt in its
        argv (argv is world-readable in ``/proc``); PROMPT, when given, is pasted once the agent
        is ready (a one-off note, not queued). A live occupant that carries the agent's own
        mark is left as it is (the agent is already running)."""
        adapter = adapter_for(ctx, agent.harness, agent.args)
        adapter.check_runner("tmux")
        spec = _spec(ctx, adapter, agent, session_id, None)
        launch = adapter.resume_interactive(spec) if resume else adapter.interactive(spec)
        launch = confine.prepare(ctx, agent, with_located_binary(launch))
        # trusted through the root holding every workspace (one shared state file left alone at
        # each spawn); a confined agent sees only its own tree and has a state file of its own
        roots = () if confine.confined(ctx) else ctx.config.workspace_roots
        adapter.prepare(launch, roots)
        if resume:
            transcripts.restore(ctx, agent, adapter, launch)
        tmux = ctx.runners.tmux
        target = agent.tmux_target
        env = {**launch.env, **spawn_env(ctx, agent, adapter.adapter_name, launch.env)}
        argv, env = confine.argv(ctx, agent, launch, env)
        until = nodes.check_fence(ctx)  # a node paused past its death starts nothing
        pause_point("before-spawn")
        result = tmux.spawn(
            target, argv, cwd=agent.cwd, env=env, owner=agent.owner, until=until
        )  # the deadline is checked again as the agent starts
        ctx.ready.discard(target)
        if result.answer is Answer.OCCUPIED and tmux.owner_of(target) == agent.owner:
            keep_previous_token(ctx, agent, env)  # the running agent holds its token
            raise AlreadyRunning(result.detail)
        result.unwrap()
        if prompt is not None and self.ensure_ready(ctx, agent):
            text = pasteable(ctx, agent, QueuedPrompt(0, prompt, None, PromptStatus.pending))
            taken = _taken(ctx, agent)
            sent = tmux.deliver(target, text, adapter.submit_gap, adapter.frames_paste, until)
            if sent.ok:
                _watched(ctx, agent, submit.see_submitted(tmux, target, adapter, text, taken))
        return launch.session_id

    def deliver(
        self, ctx: Ctx, agent: Agent, item: QueuedPrompt, revive: Callable[[], None] | None
    ) -> None:
        """Stage the prompt in a tmux buffer named after it, record ``staged``, then paste.

        A prompt found ``staged`` after a crash is pasted only if its buffer still exists: the
        paste deletes the buffer, so a missing buffer means the agent already has it. A buffer
        that still exists means it was not pasted: the prompt goes back to ``pending`` (recorded
        before anything else happens, since a respawn can end the tmux server and its buffers)
        and is staged again. A paste refused because the pane died puts it back to ``pending``.
        """
        tmux = ctx.runners.tmux
        name = _buffer_name(agent, item.seq)
        if item.status is PromptStatus.staged:
            buffer = tmux.has_buffer(name)
            if not buffer.ok:
                raise Unavailable("tmux did not answer about a staged prompt")
            if not buffer.exists:
                return
            _mark(ctx, item.seq, PromptStatus.pending)
        nodes.check_fence(ctx)  # a node paused past its death delivers nothing
        adapter = adapter_for(ctx, agent.harness, agent.args)
        text = self._stage(ctx, agent, item, name, revive, adapter.frames_paste)
        crash_point("after-staged")
        until = nodes.check_fence(ctx)
        pause_point("before-paste")
        taken = _taken(ctx, agent)
        pasted = tmux.paste_staged(
            agent.tmux_target,
            name,
            adapter.submit_gap,
            adapter.frames_paste,
            until=until,  # tmux's own check, as it pastes
        )
        if pasted.answer is Answer.LAPSED:  # frozen past the fence: nothing pasted, still staged
            raise Unavailable(f"node {nodes.node_name(ctx)}: {pasted.detail}; not delivering")
        if pasted.answer in (Answer.DEAD, Answer.ABSENT):
            _mark(ctx, item.seq, PromptStatus.pending)
            ctx.ready.discard(agent.tmux_target)
            raise Unavailable(
                f"the agent in {agent.target} exited before its prompt was pasted; will retry"
            )
        pasted.unwrap()
        _watched(ctx, agent, submit.see_submitted(tmux, agent.tmux_target, adapter, text, taken))

    def _stage(
        self,
        ctx: Ctx,
        agent: Agent,
        item: QueuedPrompt,
        name: str,
        revive: Callable[[], None] | None,
        frame: bool,
    ) -> str:
        """Stage the prompt for a live, ready agent of ours (between the paste's markers when
        FRAME), then record ``staged``; the text staged.

        An agent this process has already seen ready is staged at once (the staging command
        also says whether its pane is alive and whose it is: one tmux invocation); any other
        agent, or one found dead, is made live and ready first.
        """
        tmux = ctx.runners.tmux
        target = agent.tmux_target
        text = pasteable(ctx, agent, item)
        staged = tmux.stage(target, text, name, frame) if target in ctx.ready else None
        if staged is None or not staged.ok:
            ctx.ready.discard(target)
            self._ensure_live(ctx, agent, revive)
            staged = tmux.stage(target, text, name, frame)
        if staged.answer in (Answer.DEAD, Answer.ABSENT):
            raise NotRunning(f"the agent in {target} exited before its prompt was pasted")
        staged.unwrap()
        crash_point("after-stage")
        if staged.owner != agent.owner:
            tmux.run("delete-buffer", "-b", name, ";", "delete-buffer", "-b", f"{name}-cr")
            raise foreign_occupant(ctx, agent)
        with ctx.db.transaction() as tx:
            queue.mark(tx, item.seq, PromptStatus.staged)
        return text

    def _ensure_live(self, ctx: Ctx, agent: Agent, revive: Callable[[], None] | None) -> None:
        """Make sure the agent runs and takes input: REVIVE it when it is gone (or refuse)."""
        target = agent.tmux_target
        probe = ctx.runners.tmux.probe(target)
        if probe is Probe.UNKNOWN:
            raise Unavailable(f"tmux did not answer about {target}")
        if probe is not Probe.LIVE:
            if revive is None:
                raise NotRunning(f"the agent in {target} is not running")
            revive()
        elif ctx.runners.tmux.owner_of(target) != agent.owner:
            raise foreign_occupant(ctx, agent)
        if not self.ensure_ready(ctx, agent):
            if ctx.runners.tmux.probe(target) is not Probe.LIVE and revive is None:
                raise NotRunning(f"the agent in {target} is not running")
            raise Unavailable(f"the agent in {target} is not ready for input")

    def ensure_ready(self, ctx: Ctx, agent: Agent, timeout: float = READY_TIMEOUT) -> bool:
        """Wait (once per process and target) until the agent takes input."""
        target = agent.tmux_target
        if target in ctx.ready:
            return True
        adapter = adapter_for(ctx, agent.harness, agent.args)
        ok = ctx.runners.tmux.wait_ready(
            target, adapter.ready_pattern, timeout=timeout, stop=ctx.stopping
        )
        if ok:
            ctx.ready.add(target)
        return ok

    def stays_alive(self, ctx: Ctx, agent: Agent, seconds: float) -> bool:
        """True when the pane is still live after SECONDS (a resumed agent that failed to
        resume exits at once), or as soon as the harness's ready pattern shows (the resumed
        agent takes input: it resumed); polls, so a death is seen as soon as tmux shows it. A
        harness without a ready pattern is watched for the whole SECONDS."""
        tmux = ctx.runners.tmux
        pattern = adapter_for(ctx, agent.harness, agent.args).ready_pattern
        if pattern is not None and seconds > 0:
            if tmux.wait_ready(agent.tmux_target, pattern, timeout=seconds, stop=ctx.stopping):
                ctx.ready.add(agent.tmux_target)
                return True
            return tmux.probe(agent.tmux_target) is Probe.LIVE
        deadline = time.monotonic() + seconds
        while True:
            probe = tmux.probe(agent.tmux_target)
            if probe in (Probe.DEAD, Probe.ABSENT):
                return False
            left = deadline - time.monotonic()
            if left <= 0:
                return probe is Probe.LIVE
            time.sleep(min(0.05, left))  # the last look is at the deadline, not after it

    def probe(self, ctx: Ctx, agent: Agent) -> str:
        return ctx.runners.tmux.probe(agent.tmux_target).value

    def screen(self, ctx: Ctx, agent: Agent, lines: int) -> str:
        return ctx.runners.tmux.capture(agent.tmux_target, lines).unwrap().text


class ProcessAgents:
    """Headless agents: each delivery is one run of the harness to completion."""

    kind: RunnerKind = "process"
    takes_first_prompt = True

    def launch(
        self, ctx: Ctx, agent: Agent, prompt: str | None, session_id: str | None, *, resume: bool
    ) -> str | None:
        adapter = adapter_for(ctx, agent.harness, agent.args)
        adapter.check_runner("process")
        if prompt is None:
            return agent.conversation_id
        return self._run(ctx, agent, prompt, session_id, resume=resume)

    def deliver(
        self, ctx: Ctx, agent: Agent, item: QueuedPrompt, revive: Callable[[], None] | None
    ) -> None:
        resume = agent.conversation_id is not None
        session_id = agent.conversation_id or agent.key
        learned = self._run(ctx, agent, item.text, session_id, resume=resume)
        agent.conversation_id = learned or agent.conversation_id

    def _run(
        self, ctx: Ctx, agent: Agent, prompt: str, session_id: str | None, *, resume: bool
    ) -> str | None:
        adapter = adapter_for(ctx, agent.harness, agent.args)
        spec = _spec(ctx, adapter, agent, session_id, prompt)
        launch = adapter.headless_resume(spec) if resume else adapter.headless(spec)
        launch = confine.prepare(ctx, agent, with_located_binary(launch))
        if resume:
            transcripts.restore(ctx, agent, adapter, launch)
        argv, env = confine.argv(ctx, agent, launch, dict(launch.env))
        try:
            result = ctx.runners.process.run(
                agent.key,
                argv,
                cwd=agent.cwd,
                env=env,
                transcript=transcript_path(ctx, agent),
                stdin=None if launch.prompt_in_argv else prompt.encode("utf-8"),
            )
        finally:
            if spec.prompt_file is not None:
                spec.prompt_file.unlink(missing_ok=True)
        transcripts.keep(ctx, agent, adapter, launch)
        ev.emit(
            ctx.db,
            "session.exited",
            source="sessions",
            work_item=agent.label if agent.kind is AgentKind.WORK_ITEM else None,
            session_id=agent.key,
            exitCode=result.exit_code,
            timedOut=result.timed_out,
            seconds=round(result.duration, 3),
        )
        if not result.ok:
            raise Unavailable(
                f"the headless agent of {agent.label} exited {result.exit_code}: "
                f"{result.stderr_tail[-300:]}"
            )
        return launch.session_id or adapter.session_id_from_output(result.output())

    def stays_alive(self, ctx: Ctx, agent: Agent, seconds: float) -> bool:
        return True

    def probe(self, ctx: Ctx, agent: Agent) -> str:
        return "headless"

    def screen(self, ctx: Ctx, agent: Agent, lines: int) -> str:
        path = transcript_path(ctx, agent)
        if not path.exists():
            return ""
        return "\n".join(path.read_text("utf-8", errors="replace").splitlines()[-lines:])


class AlreadyRunning(Refused):
    """A spawn found the agent's own live target: the agent is already running."""


def foreign_occupant(ctx: Ctx, agent: Agent) -> Refused:
    """Report (``session.foreign_occupant``) that a program the-loop did not start holds
    AGENT's target; the error to raise names how to look at it. Nothing is touched."""
    inspect = ctx.runners.tmux.inspect_command(agent.tmux_target)
    message = (
        f"a program the-loop did not start holds {agent.target}; it is never pasted into, "
        f"signalled or killed. Look at it with `{inspect}`"
    )
    ev.emit(
        ctx.db,
        "session.foreign_occupant",
        source="agent",
        **agent.event_names,
        target=agent.target,
    )
    return Refused(message)


RUNNERS: dict[str, AgentRunner] = {"tmux": TmuxAgents(), "process": ProcessAgents()}


def runner_for(agent: Agent) -> AgentRunner:
    """The runner of AGENT's kind."""
    return RUNNERS[agent.runner]


def tmux_agents() -> TmuxAgents:
    """The tmux implementation (readiness questions only it can answer)."""
    runner = RUNNERS["tmux"]
    assert isinstance(runner, TmuxAgents)
    return runner
