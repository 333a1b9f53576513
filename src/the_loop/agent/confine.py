"""Confinement of an agent's harness (SPEC §18), for work items and standing sessions alike:
the agent layer's one place that decides what an agent's sandbox holds.

``prepare`` gives a confined launch its own home (``<stateDir>/homes/<hash>``: ``HOME``,
``CLAUDE_CONFIG_DIR``, ``CODEX_HOME`` inside it, at the same path inside the sandbox as
outside, so transcripts, resume and the hook's transcript check see one path); the harness's
``prepare`` then writes its first-run settings there. ``argv`` wraps the harness argv in the
sandbox (``the_loop.runner.sandbox``) with the agent's own hook spool and, under
``network: allowlist``, the forwarder to the daemon's egress proxy.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from the_loop.agent import egress, github_broker
from the_loop.agent.attention.spawn import hook_dir, issue_token
from the_loop.agent_files import write_in_home
from the_loop.errors import SpawnFailed
from the_loop.harness import harness_dir, installed_programs
from the_loop.hook import AGENT_ENV, SPOOL_ENV, SPOOL_NAME, TOKEN_ENV
from the_loop.runner import limits, sandbox
from the_loop.runner.tmux_core import secret_env_names

if TYPE_CHECKING:
    from collections.abc import Mapping

    from the_loop.agent.model import Agent
    from the_loop.context import Ctx
    from the_loop.harness import Launch

HOMES = "homes"


def agent_hash(key: str) -> str:
    """A short stable name for AGENT KEY in paths (keys hold ``:`` and ``/``)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def home_of(ctx: Ctx, agent: Agent) -> Path:
    return ctx.state_dir / HOMES / agent_hash(agent.key)


def confined_home(ctx: Ctx, key: str) -> Path | None:
    """The home agent KEY runs with when agents are confined (its harness writes its files
    there); None when they are not."""
    return ctx.state_dir / HOMES / agent_hash(key) if confined(ctx) else None


def confined(ctx: Ctx) -> bool:
    """True when agents of CTX's config run in the sandbox."""
    return sandbox.mode_of(ctx.config).mode == "bwrap"


def prepare(ctx: Ctx, agent: Agent, launch: Launch) -> Launch:
    """LAUNCH with the agent's own home when agents are confined (LAUNCH unchanged else),
    carrying the operator's harness logins into it."""
    if not confined(ctx):
        return launch
    home = home_of(ctx, agent)
    for path in (home.parent, home):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    carry_logins(launch.env, home)
    env = dict(launch.env)
    env.update(
        HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"), CODEX_HOME=str(home / ".codex")
    )
    return replace(launch, env=env, agent_home=home)


LOGINS = (
    ("CLAUDE_CONFIG_DIR", ".claude", ".credentials.json"),
    ("CLAUDE_CONFIG_DIR", ".claude", "settings.json"),
    ("CODEX_HOME", ".codex", "auth.json"),
    ("CODEX_HOME", ".codex", "config.toml"),
    ("", ".gemini", "oauth_creds.json"),
    ("", ".gemini", "settings.json"),
)
"""Each harness's login file: the variable naming its folder, the folder under ``$HOME``, the
file. Gemini's ``settings.json`` holds the sign-in its operator chose (Google, API key, Vertex):
without it, Gemini asks how to sign in before anything else. Codex's ``config.toml`` holds the
model and the provider its operator chose (a provider of their own has no ``auth.json``: Codex
without it asks how to sign in); Claude Code's ``settings.json`` their model, environment (a
gateway's ``ANTHROPIC_BASE_URL``) and permission rules. The-loop's own hooks reach Claude Code
on its command line, not in that file."""


def carry_logins(env: Mapping[str, str], home: Path) -> list[Path]:
    """Copy the operator's harness logins (ENV: the harness's environment, else the daemon's)
    into the agent's own HOME, so that a confined agent is logged in as its operator is; a copy
    the agent refreshed since (newer) is kept. The files copied; never raises."""
    copied: list[Path] = []
    for variable, folder, name in LOGINS:
        source = harness_dir(variable, folder, env) / name
        target = home / folder / name
        try:
            if not source.is_file() or source.resolve() == target.resolve():
                continue
            if target.exists() and target.stat().st_mtime >= source.stat().st_mtime:
                continue
            write_in_home(home, f"{folder}/{name}", source.read_bytes())
        except OSError:
            continue
        copied.append(target)
    return copied


def argv(
    ctx: Ctx, agent: Agent, launch: Launch, env: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """The argv and environment that run LAUNCH for AGENT (ENV: its whole extra environment):
    confined when the mode says so. A confined agent on an ``allowlist`` network gets a hook
    token even when its harness does not report (the egress proxy knows it by that token)."""
    out_env = dict(env)
    mode = sandbox.mode_of(ctx.config)
    if mode.mode != "bwrap":
        return list(launch.argv), out_env
    works, why = sandbox.bwrap_works()
    if not works:
        raise SpawnFailed(f"sandbox.mode is bwrap but {why}")
    layout = sandbox.layout_for(
        ctx.config,
        state_dir=ctx.state_dir,
        config_file=ctx.loaded.path.absolute() if ctx.loaded.path else None,
        tree=Path(os.path.abspath(agent.cwd)),
        home=home_of(ctx, agent),
        argv=launch.argv,
        env=env,
        withheld=secret_env_names(ctx.config),
        programs=installed_programs(ctx.config),
    )
    channel = hook_dir(ctx.state_dir)
    layout.channels.append(channel)
    layout.spools = channel / SPOOL_NAME
    spool = env.get(SPOOL_ENV)
    layout.spool = Path(spool) if spool else None
    inner = list(launch.argv)
    if layout.network == "allowlist":
        if TOKEN_ENV not in out_env:
            token = issue_token(
                ctx.db, agent.key, work_item=work_item_of(agent), transcript_root=None
            )
            out_env.update({AGENT_ENV: agent.key, TOKEN_ENV: token})
        where = egress.egress_dir(ctx.state_dir)
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        layout.channels.append(where)
        mirrored = egress.mirrored_ports(egress.allow_hosts(ctx.config))
        free = (p for p in range(egress.PROXY_PORT, 65535) if p not in mirrored)
        proxy_port = next(free)
        ports = {proxy_port: "proxy", **{p: f"port:{p}" for p in mirrored}}
        ports.update(brokered(ctx, agent, layout, next(free), next(free)))
        inner = sandbox.forwarded(inner, where / egress.SOCKET, ports)
        proxy = f"http://127.0.0.1:{proxy_port}"
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
            layout.set_env[name] = proxy
        layout.set_env["NO_PROXY"] = layout.set_env["no_proxy"] = "127.0.0.1,localhost"
    held = limited(ctx, agent)
    return limits.joined(sandbox.wrap(layout, limits.inside(inner, held)), held), out_env


def limited(ctx: Ctx, agent: Agent) -> limits.Plan:
    """AGENT's memory and process limits (``sandbox.memoryMb``, ``sandbox.pids``), made."""
    settings = ctx.config.sandbox
    if settings.memory_mb is None and settings.pids is None:
        return limits.Plan()
    group = limits.group_name(ctx.state_dir, agent_hash(agent.key))
    return limits.plan(group, settings.memory_mb, settings.pids)


def work_item_of(agent: Agent) -> str | None:
    """The work item AGENT works on (None for a standing session)."""
    return agent.label if agent.label and not agent.key.startswith("standing:") else None


def brokered(
    ctx: Ctx, agent: Agent, layout: sandbox.Layout, git_port: int, api_port: int
) -> dict[int, str]:
    """The GitHub broker's two loopback ports for AGENT (``the_loop.agent.github_broker``): named in
    LAYOUT's environment, and git led to them by the agent's own git configuration."""
    layout.set_env[github_broker.GIT_ENV] = f"http://127.0.0.1:{git_port}"
    layout.set_env[github_broker.API_ENV] = f"http://127.0.0.1:{api_port}"
    text = github_broker.agent_git_config(ctx.config, work_item_of(agent), git_port)
    write_in_home(layout.home, github_broker.GIT_CONFIG, text)
    return {git_port: github_broker.GIT, api_port: github_broker.API}
