"""Conversation transcripts kept in the store, put back where a resume reads them.

On a shared database (PostgreSQL) the daemon copies each finished turn of a Claude Code
conversation into the store (``hook_apply.keep_transcript``, ``store.transcripts``). A
session taken over by another node (``placement.take_over``) is respawned there with the
harness's resume, which reads the transcript from this host's disk: ``restore`` writes the
stored copy to the file the harness will read (``HarnessAdapter.conversation_file``, under the
new working directory) when that file is missing, before the harness starts. A headless run
has no hooks: ``keep`` copies its new lines after it ends.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

from the_loop import events as ev
from the_loop.agent.model import Agent, AgentKind
from the_loop.agent_files import Folder, open_agent_file
from the_loop.context import Ctx
from the_loop.errors import SpawnFailed
from the_loop.harness import HarnessAdapter, Launch
from the_loop.store import transcripts as store

SOURCE = "agent"


def restore(ctx: Ctx, agent: Agent, adapter: HarnessAdapter, launch: Launch) -> Path | None:
    """Before the resume LAUNCH of AGENT: when the conversation file it reads is missing here
    and the store keeps the conversation whole, write it there (``session.transcript_restored``)
    and return its path; None when nothing was written. Raises ``SpawnFailed`` when the file
    cannot be written (the resume then falls back to a fresh start)."""
    path = adapter.conversation_file(launch)
    if path is None or launch.session_id is None or path.exists():
        return None
    data = store.load(ctx.db.connect(), launch.session_id)
    if data is None:
        return None
    home = launch.agent_home  # a confined agent's own: nothing the agent left there is followed
    if home is not None and path.is_relative_to(home):
        root, mine = home, True
    else:
        root, mine = path.parent, False
    try:
        with Folder(root, agents=mine) as folder:
            folder.replace(path.relative_to(root), data)
    except OSError as exc:
        raise SpawnFailed(f"cannot write the kept transcript to {path}: {exc}") from None
    ev.emit(
        ctx.db,
        "session.transcript_restored",
        source=SOURCE,
        **agent.event_names,
        conversation=launch.session_id,
        bytes=len(data),
        path=str(path),
    )
    return path


def keep(ctx: Ctx, agent: Agent, adapter: HarnessAdapter, launch: Launch) -> str | None:
    """After the headless run LAUNCH of AGENT ended, on a shared database: copy the lines its
    conversation file gained into the store, as the ``Stop`` hook does for an interactive
    agent; the store's outcome, None when there was nothing to copy."""
    path = adapter.conversation_file(launch) if ctx.db.shared else None
    if path is None or launch.session_id is None:
        return None
    found = store.get(ctx.db.connect(), launch.session_id)
    if found is not None and found.over_cap:
        return None
    start = 0 if found is None else found.bytes
    within = launch.agent_home  # a confined agent's: nothing read through a link out of it
    chunk, size = new_lines(str(path), start, store.MAX_BYTES, within)
    if not chunk and size <= store.MAX_BYTES:
        return None
    work_item = agent.kind is AgentKind.WORK_ITEM
    with ctx.db.transaction() as tx, contextlib.suppress(ValueError):  # not UTF-8: not kept
        return store.append(
            tx,
            launch.session_id,
            agent.key,
            start,
            chunk,
            now=time.time(),
            seen=size,
            work_item=agent.label if work_item else None,
            standing=None if work_item else agent.key.removeprefix("standing:"),
        )
    return None


def new_lines(path: str, start: int, cap: int, within: str | Path | None) -> tuple[bytes, int]:
    """The whole lines file PATH holds from byte START on, and the file's size (b"" when it
    has none, or is shorter than START: not the file that was stored; b"" too when it is
    larger than CAP, which is then not read, or not inside WITHIN: ``open_agent_file``)."""
    try:
        with open_agent_file(path, within) as handle:
            size = handle.seek(0, os.SEEK_END)
            if size <= start or size > cap:
                return b"", size
            handle.seek(start)
            data = handle.read(size - start)
    except OSError:
        return b"", 0
    cut = data.rfind(b"\n")
    return (data[: cut + 1] if cut >= 0 else b""), size
