"""Memory-aware admission: whether a spawn or a resume may start now, and the agents' memory.

A start waits (in the FIFO queue, ``dispatch.queued`` with reason ``memory``) while the host's
``MemAvailable`` is below ``admission.minFreeMemoryMb`` or the live agents' measured memory is
above ``admission.maxAgentsMemoryMb``. An agent's memory is the anonymous resident memory of
its pane's process tree (what stopping it gives back; the executable's pages, shared by every
agent of the same harness, are not counted once per agent: decision 0067); only live panes
carrying a the-loop ownership mark count, so a suspended session (dead pane) counts nothing.
The figures are read when a start is decided, from ``/proc`` (``agent.spend.memory``) and one
``tmux list-panes -a``.
"""

from __future__ import annotations

from the_loop.agent.spend import memory
from the_loop.agent.spend.memory import AgentMemory, MemoryReport
from the_loop.context import Ctx
from the_loop.runner.tmux import PANE_FORMAT
from the_loop.runner.tmux_core import parse_panes


def live_pane_pids(ctx: Ctx) -> dict[str, list[int]]:
    """The pane pids of each live agent (by its ownership mark) on the private tmux server."""
    result = ctx.runners.tmux.ask("list-panes", "-a", "-F", PANE_FORMAT)
    if not result.ok:
        return {}
    out: dict[str, list[int]] = {}
    for line in result.stdout.splitlines():
        for pane in parse_panes(line, line.split("\t", 1)[0]):
            if pane.owner and not pane.dead:
                out.setdefault(pane.owner, []).append(pane.pid)
    return out


def agents_memory_mb(ctx: Ctx) -> dict[str, tuple[float, float]]:
    """(resident, anonymous) MiB of each live agent's pane process tree."""
    return memory.trees_memory_mb(live_pane_pids(ctx))


def _reason(ctx: Ctx, available: float | None, held: float) -> str | None:
    cfg = ctx.config.admission
    if cfg.min_free_memory_mb and available is not None and available < cfg.min_free_memory_mb:
        return (
            f"{available:.0f} MiB available, below admission.minFreeMemoryMb "
            f"{cfg.min_free_memory_mb}"
        )
    if cfg.max_agents_memory_mb is not None and held > cfg.max_agents_memory_mb:
        return (
            f"live agents hold {held:.0f} MiB, above admission.maxAgentsMemoryMb "
            f"{cfg.max_agents_memory_mb}"
        )
    return None


def blocked(ctx: Ctx) -> str | None:
    """Why a spawn or resume must wait now; None when it may start (always, when admission
    is not configured: then nothing is measured)."""
    cfg = ctx.config.admission
    if not cfg.enabled:
        return None
    available = memory.available_mb() if cfg.min_free_memory_mb else None
    held = 0.0
    if cfg.max_agents_memory_mb is not None:
        held = sum(anon for _rss, anon in agents_memory_mb(ctx).values())
    return _reason(ctx, available, held)


def report(ctx: Ctx) -> MemoryReport:
    """The figures ``status`` shows, and whether a start would wait now."""
    per_agent = agents_memory_mb(ctx)
    available = memory.available_mb()
    rss = round(sum(r for r, _ in per_agent.values()), 1)
    anon = round(sum(a for _, a in per_agent.values()), 1)
    cfg = ctx.config.admission
    return MemoryReport(
        available_mb=round(available, 1) if available is not None else None,
        agents_rss_mb=rss,
        agents_anon_mb=anon,
        live_agents=len(per_agent),
        agents=[
            AgentMemory(agent=k, rss_mb=r, anon_mb=a) for k, (r, a) in sorted(per_agent.items())
        ],
        min_free_memory_mb=cfg.min_free_memory_mb,
        max_agents_memory_mb=cfg.max_agents_memory_mb,
        waiting=_reason(ctx, available, anon) if cfg.enabled else None,
    )
