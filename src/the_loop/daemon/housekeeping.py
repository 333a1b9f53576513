"""Daemon background work that belongs to no feature: config reload, event pruning, WAL
checkpoints, standing auto-start, the reconciler and the integrity check.

Each runs supervised (``the_loop.supervise``): a fault raised out of a loop restarts it after a
backoff, and every completed pass reports progress, so a stalled loop shows in health until it
works again."""

from __future__ import annotations

import asyncio
import os

from the_loop import agent as layer
from the_loop import events as ev
from the_loop import instance
from the_loop.agent import panes
from the_loop.cluster import nodes
from the_loop.config import LoadedConfig, config_from_bytes, read_config_bytes, record_running
from the_loop.context import Ctx
from the_loop.errors import ConfigInvalid
from the_loop.pulse import Pulse, first
from the_loop.refs import WorkItemRef, standing_key, standing_target
from the_loop.standing import service as standing
from the_loop.store import attention as attention_store
from the_loop.store import sessions as session_store
from the_loop.store import standing as standing_store
from the_loop.store import transcripts as transcript_store
from the_loop.store import usage as usage_store
from the_loop.store.integrity import quick_check
from the_loop.store.sessions import SessionRecord, SessionStatus
from the_loop.store.standing import StandingStatus
from the_loop.supervise import board_for, monitor, periodic, wait_or_stop
from the_loop.wire import iso_now
from the_loop.work_items import service as sessions
from the_loop.work_items.prune import prune_worktrees

SOURCE = "daemon"
RESTART_ONLY = {"stateDir": "state_dir", "server": "server", "tmux.socket": "tmux"}
PRUNE_EVERY_SECONDS = 3600.0
RELOAD_POLL_SECONDS = 1.0


async def prune_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Prune events older than ``events.retentionDays``, the transcripts of closed sessions
    and the worktrees past ``workspaces.keepDays``, at start and every hour."""
    await periodic(ctx, stop, "prune-events", lambda: prune(ctx), lambda: PRUNE_EVERY_SECONDS)


def prune(ctx: Ctx) -> int:
    """One pruning pass (events, closed sessions' transcripts, then worktrees past
    ``workspaces.keepDays``); how many rows went."""
    gone = ev.prune(ctx.db, ctx.config.events.retention_days)
    with ctx.db.transaction() as tx:
        gone += transcript_store.prune_closed(tx)
    prune_worktrees(ctx)
    return gone


CHECKPOINT_SECONDS = 0.25


async def checkpoint_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Checkpoint the database's WAL in a worker thread after commits, at most every
    ``CHECKPOINT_SECONDS`` and only when it changed since the last checkpoint (a ``stat``), so
    that no commit on the daemon's request path waits for a checkpoint's copy and fsync. It
    waits on a ``Pulse`` (``the_loop.pulse``): with nothing committed it does not run."""
    ctx.db.defer_checkpoints()
    watch = monitor(ctx, "checkpoint")
    pulse = Pulse(ctx.db)
    done: tuple[int, int] | None = None
    try:
        while True:
            began = pulse.begin()
            stamp = ctx.db.wal_stamp()
            if stamp is not None and stamp != done:
                await asyncio.to_thread(ctx.db.checkpoint)
                done = stamp  # taken before: a commit during the checkpoint is seen next time
            watch.progressed()
            if await pulse.wait(stop, began, float("inf"), CHECKPOINT_SECONDS):
                break
    finally:
        pulse.close()
    await asyncio.to_thread(ctx.db.checkpoint)


RELOAD_SETTLE_SECONDS = 0.1


def _stamp(ctx: Ctx) -> tuple[int, int] | None:
    path = ctx.loaded.path
    try:
        info = path.stat() if path is not None else None
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size) if info is not None else None


async def reload_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Reload the config file when it changes; an invalid edit keeps the old config.

    A change is read once the file has stayed the same for ``RELOAD_SETTLE_SECONDS`` (an
    editor that truncates and then writes is not read half-written), and only new content is
    reloaded (``reload_config``): one edit, one ``config.reloaded``."""
    seen = _stamp(ctx)
    watch = monitor(ctx, "reload-config")
    while not await wait_or_stop(stop, RELOAD_POLL_SECONDS):
        current = _stamp(ctx)
        if current is not None and current != seen:
            if await wait_or_stop(stop, RELOAD_SETTLE_SECONDS):
                return
            if _stamp(ctx) != current:
                continue  # still being written: look again on the next poll
            seen = current
            await asyncio.to_thread(reload_config, ctx)
        watch.progressed()


def restart_needed(running: LoadedConfig, new: LoadedConfig) -> list[str]:
    """Restart-only keys whose value in NEW differs from what the daemon RUNNING uses."""
    a, b = running.config, new.config
    changed = []
    if a.state_path != b.state_path:
        changed.append("stateDir")
    if (a.server.host, a.server.port) != (b.server.host, b.server.port):
        changed.append("server.host/port")
    if a.tmux.socket != b.tmux.socket:
        changed.append("tmux.socket")
    if a.database != b.database:
        changed.append("database")
    if a.node != b.node:
        changed.append("node")
    return changed


def reload_config(ctx: Ctx) -> bool:
    """Re-read the config file into CTX if its content changed since it was loaded (or last
    refused): exactly one ``config.reloaded`` or ``config.reload_failed`` per new content.
    ``restartNeeded`` compares with the config the daemon started on, so reverting a
    restart-only setting clears it. True when a new config was taken."""
    path = ctx.loaded.path
    if path is None:
        return False
    try:
        raw = read_config_bytes(path)
    except ConfigInvalid as exc:
        return _refused(ctx, None, exc)
    digest = instance.config_digest(raw)
    if digest in (ctx.loaded.digest, ctx.config_rejected):
        return False
    try:
        new = config_from_bytes(path, raw)
    except ConfigInvalid as exc:
        return _refused(ctx, digest, exc)
    ctx.config_rejected = None
    ctx.restart_needed = restart_needed(ctx.started_with or ctx.loaded, new)
    ctx.loaded = new
    record_running(ctx.state_dir, new, os.getpid())
    ev.emit(
        ctx.db,
        "config.reloaded",
        source=SOURCE,
        at=iso_now(),
        restartNeeded=list(ctx.restart_needed),
    )
    for warning in new.config.warnings():
        ev.emit(ctx.db, "config.warning", source=SOURCE, message=warning)
    return True


def _refused(ctx: Ctx, digest: str | None, exc: ConfigInvalid) -> bool:
    ctx.config_rejected = digest
    ev.emit(ctx.db, "config.reload_failed", source=SOURCE, error=exc.message, problems=exc.problems)
    return False


async def standing_autostart(ctx: Ctx, stop: asyncio.Event) -> None:
    """Start the auto-start standing sessions once the service is up; none is started after
    the daemon began to stop (``the-loop stop`` then stops the ones already started)."""
    await asyncio.to_thread(standing.autostart, ctx, stop.is_set)


RECONCILE_SECONDS = 60.0
"""The reconciler's safety beat; it looks at once when tmux says a watched pane's program
exited or its pipe closed (``runner.tmux_watch``, decision 0066)."""
AGAIN_SECONDS = 1.0
"""After a death signal, the reconciler looks once more this much later: a program can be
gone a moment before tmux marks its pane dead."""


async def reconcile_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """Report live sessions whose tmux target vanished or whose agent exited (once each)."""
    watch = monitor(ctx, "reconciler")
    died = ctx.panes_died
    again = False  # told of a death: look once more a moment later (tmux may mark it late)
    while True:
        await first(AGAIN_SECONDS if again else RECONCILE_SECONDS, stop, died)
        if stop.is_set():
            return
        again = died.is_set()
        died.clear()
        await asyncio.to_thread(reconcile_once, ctx)
        watch.progressed()


def reconcile_once(ctx: Ctx) -> list[str]:
    """One pass; returns the sessions (and ``standing:NAME`` keys) newly found without a live
    agent. What was told stays in the store, so each death is told once however often it is
    seen, and an agent started again and lost again is told again: a work-item session found
    so, not recorded gone already, is looked at again under its item's processing lock (a
    delivery may be starting it again this moment) and told by
    ``work_items.service.report_gone``; a running standing session under its name's lock, by
    ``standing.service.report_gone``, which records it stopped."""
    found: list[str] = []
    conn = ctx.db.connect()
    here = nodes.shared_name(ctx)
    by_status = {
        status: session_store.list_sessions(conn, status, None)
        for status in (SessionStatus.active, SessionStatus.paused)
    }
    targets = [r.tmux_target for rs in by_status.values() for r in rs if r.tmux_target]
    running = [  # another node's standing agent is in its tmux server, not ours
        r.name
        for r in standing_store.list_records(conn)
        if r.status is StandingStatus.running and not nodes.elsewhere(here, r.node)
    ]
    # one tmux client, asked even for no session: it wakes tmux's reaper when an agent's end
    # went unseen (standing agents' too; ``runner.tmux_core.wake_reaper``)
    known = panes.probe_many(ctx, [*targets, *(standing_target(n) for n in running)])
    stopped = usage_store.holds_of(conn, [standing_key(n) for n in running])
    for name in running:  # a held one's harness was stopped on purpose
        listed = (known or {}).get(standing_target(name))
        gone = listed is not None and listed.value in ("dead", "absent")
        if gone and standing_key(name) not in stopped and standing.report_gone(ctx, name):
            found.append(standing_key(name))
    for records in by_status.values():
        held = usage_store.holds_of(conn, [r.id for r in records])
        told = {r.agent for r in attention_store.rows(conn, [r.id for r in records]) if r.gone}
        for rec in records:
            if rec.runner != "tmux" or rec.started_at is None or rec.id in held:
                continue  # a held session's harness was stopped on purpose
            if nodes.elsewhere(here, rec.node) or rec.id in told:
                continue  # another node's agent (its tmux server is not ours), or told
            listed = (known or {}).get(rec.tmux_target or "")
            pane = listed.value if listed is not None else sessions.probe(ctx, rec)
            if pane in ("dead", "absent") and _gone(ctx, rec):
                found.append(rec.id)
    if found:
        _server_lost(ctx, len(found))
    return found


def _server_lost(ctx: Ctx, agents: int) -> None:
    """Say so (``runner.server_lost``) when the AGENTS just found gone went with the tmux
    server itself, which crashed or was killed (``panes.server_ended``, decision 0102)."""
    socket = panes.server_ended(ctx)
    if socket is not None:
        ev.emit(ctx.db, "runner.server_lost", source=SOURCE, socket=socket, agents=agents)


def _gone(ctx: Ctx, rec: SessionRecord) -> bool:
    """Under REC's item lock: whether its agent is still gone (told now or before)."""
    with layer.hold(ctx, [WorkItemRef.parse(rec.work_item).slug]):
        now = session_store.get(ctx.db.connect(), rec.id)
        if now is None or now.status not in (SessionStatus.active, SessionStatus.paused):
            return False
        pane = sessions.probe(ctx, now)
        if pane not in ("dead", "absent"):
            return False
        sessions.report_gone(ctx, now, pane)
        return True


INTEGRITY_EVERY_SECONDS = 6 * 3600.0


async def integrity_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """``PRAGMA quick_check`` at start and every ``INTEGRITY_EVERY_SECONDS``; what it finds
    is reported by health until a later check finds the database whole."""
    board = board_for(ctx.db)
    while True:
        board.integrity = await asyncio.to_thread(quick_check, ctx.db)
        monitor(ctx, "integrity").progressed()
        if await wait_or_stop(stop, INTEGRITY_EVERY_SECONDS):
            return
