"""Starting agents: adapter + runner, shared by work-item and standing sessions.

Builds the launch with the harness adapter, prepares the harness's own settings, spawns it in
tmux, and answers the questions every session service asks: is it ready for a paste, did a
resumed conversation stay alive.
"""

from __future__ import annotations

import time
import uuid
from contextlib import ExitStack
from pathlib import Path

from the_loop.context import Ctx
from the_loop.harness import HarnessAdapter, Launch, LaunchSpec, build_adapter
from the_loop.runner import Runners
from the_loop.runner.tmux import Probe

READY_TIMEOUT = 60.0


def runners(ctx: Ctx) -> Runners:
    """The runners of CTX's config (made once per context)."""
    return ctx.runners


def hold_items(ctx: Ctx, keys: list[str]) -> ExitStack:
    """Hold the processing locks of KEYS (sorted, so two holders never deadlock)."""
    stack = ExitStack()
    locks = runners(ctx).locks
    for key in sorted(set(keys)):
        stack.enter_context(locks.hold(key))
    return stack


def adapter_for(ctx: Ctx, harness: str, args: list[str] | None = None) -> HarnessAdapter:
    """The adapter of HARNESS; ARGS, when given, replace the configured extra argv."""
    config = ctx.config.harness(harness)
    if args is not None:
        config = config.model_copy(update={"args": list(args)})
    return build_adapter(harness, config)


def _spec(
    ctx: Ctx, adapter: HarnessAdapter, cwd: Path, session_id: str | None, prompt: str | None
) -> LaunchSpec:
    prompt_file = None
    if adapter.wants_prompt_file and prompt is not None:
        spool = ctx.state_dir / "prompts"
        spool.mkdir(parents=True, exist_ok=True, mode=0o700)
        prompt_file = spool / f"{uuid.uuid4().hex}.txt"
        prompt_file.write_text(prompt, encoding="utf-8")
    return LaunchSpec(cwd=cwd, session_id=session_id, prompt=prompt, prompt_file=prompt_file)


def spawn_interactive(
    ctx: Ctx,
    adapter: HarnessAdapter,
    target: str,
    cwd: Path,
    session_id: str | None,
    prompt: str | None,
    *,
    resume: bool = False,
    owner: str | None = None,
) -> Launch:
    """Start the harness in tmux TARGET (fresh, or resuming SESSION_ID); returns the launch.

    Raises ``UnsupportedRunner``, ``Refused`` (a live occupant), ``SpawnFailed`` or
    ``Unavailable`` (tmux not answering); the adapter's ``prepare`` runs first.
    """
    adapter.check_runner("tmux")
    spec = _spec(ctx, adapter, cwd, session_id, prompt)
    launch = adapter.resume_interactive(spec) if resume else adapter.interactive(spec)
    adapter.prepare(launch)
    runners(ctx).tmux.spawn(target, launch.argv, cwd=cwd, env=dict(launch.env), owner=owner)
    ctx.ready.discard(target)
    return launch


def ensure_ready(
    ctx: Ctx, adapter: HarnessAdapter, target: str, timeout: float = READY_TIMEOUT
) -> bool:
    """Wait (once per process and target) until the agent in TARGET takes input."""
    seen: set[str] = ctx.ready
    if target in seen:
        return True
    ok = runners(ctx).tmux.wait_ready(target, adapter.ready_pattern, timeout=timeout)
    if ok:
        seen.add(target)
    return ok


def seen_ready(ctx: Ctx, target: str) -> bool:
    """True when this process has already seen the agent in TARGET ready for input (and has
    not spawned, respawned or closed it since)."""
    return target in ctx.ready


def stays_alive(ctx: Ctx, target: str, seconds: float) -> bool:
    """True when TARGET's pane is still live after SECONDS (a resumed agent that failed to
    resume exits at once); polls, so a death is seen as soon as tmux shows it."""
    tmux = runners(ctx).tmux
    deadline = time.monotonic() + seconds
    while True:
        probe = tmux.probe(target)
        if probe in (Probe.DEAD, Probe.ABSENT):
            return False
        if time.monotonic() >= deadline:
            return probe is Probe.LIVE
        time.sleep(0.05)


def forget_ready(ctx: Ctx, target: str) -> None:
    ctx.ready.discard(target)
