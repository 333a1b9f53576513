"""The hook channel: the daemon's end of ``the-loop hook`` (SPEC §15 "The hook channel").

Agents report through a unix socket, ``<stateDir>/hook/daemon.sock`` (directory 0700, socket
0600), one JSON line per connection, at most ``MAX_LINE`` bytes and ``MAX_CONNECTIONS`` at
once; while the daemon is away the hook writes the same line to its agent's own directory
``<stateDir>/hook/spool/<hash>/`` (or ``spool/`` itself), which is applied when the daemon
starts (before it listens) and on every pass of this task, each file once, in the order
written, then deleted. A report is checked and applied by ``agent.attention.reports`` (its token
must be its agent's; see there), in a worker thread.

Replies, one plain-text line each: ``ok`` once a report is applied, ``refused REASON``; for a
``PermissionRequest`` the connection stays open until the prompt is answered or closed (answers
are written to the database by any process: the CLI, the API, a GitHub comment; ``Decisions``
looks them up when a commit of this daemon or another process's write may hold one, never on a
beat of its own): ``decision JSON`` when it is answered, JSON being what the hook prints for
Claude Code (the hook answers ``ack``, and the prompt is then closed as ``answered``),
``closed`` when it was closed without a decision. A hook whose connection dropped (the daemon
restarted) sends the same report again, finds the same prompt and receives its decision. When
the last hook waiting on a prompt leaves without a decision, or without saying it took the one
it was sent (its dialog was answered in the agent's terminal; it was killed), or none came back
for it within ``RECONNECT_SECONDS`` of a restart, the agent's pane is read for the dialog to
be gone (``agent.attention.left``); a dialog that still shows is looked at again every
``UNHEARD_SECONDS`` until it is answered in the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from the_loop.agent.attention import left as dialog_left
from the_loop.agent.attention import reports as hook_apply
from the_loop.agent.attention.spawn import hook_dir
from the_loop.agent_files import open_agent_file
from the_loop.context import Ctx
from the_loop.hook import CLOSED, DECISION, OK, REFUSED, SOCKET_NAME, SPOOL_NAME
from the_loop.pulse import Pulse
from the_loop.store import attention as store
from the_loop.store import hook_tokens
from the_loop.supervise import monitor, wait_or_stop

NAME = "hook-channel"
DECISIONS = "hook-decisions"
"""The task that looks up the prompts waiting hooks wait on (its passes are its looks)."""
MAX_LINE = 1 << 20
MAX_CONNECTIONS = 256
POLL_SECONDS = 0.1
"""How often a transcript the harness is still writing is looked at (``keep_when_flushed``)."""
DECISION_GAP_SECONDS = 0.1
"""The least time between two looks at the waited prompts that commits of this daemon woke (an
answer given through the daemon reaches its hook within it; another process's answer, at the
pulse's next look for outside writes, ``pulse.OUTSIDE_SECONDS``)."""
SPOOL_SECONDS = 5.0
"""How often the spool is looked at while the daemon listens (a hook spools only when it could
not reach the socket; each report the socket takes applies the spool first, and the daemon
applies it when it starts)."""
UNHEARD_SECONDS = 1.0
"""How often the channel's beat comes while a dialog whose hook left still shows (``recheck``:
two reads of that pane; an answer given there ends the wait within about this)."""
ACK_SECONDS = 5.0
RECONNECT_SECONDS = 3.0
"""How long after it listens the channel gives the permission hooks that waited across a
restart to send their report again (each retries every ``the_loop.hook.RETRY_SECONDS``) before
it looks at the panes of the prompts none came back for (``look_unclaimed``)."""
PRUNE_SECONDS = 3600.0
STALE_TMP_SECONDS = 60.0
_SHORT_PATH = 100

log = logging.getLogger("the_loop.agent.attention.channel")


async def hook_channel_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's hook channel task: apply the spool, listen, and apply the spool again
    every ``SPOOL_SECONDS`` until STOP."""
    await Channel(ctx).run(stop)


class Decisions:
    """The prompts that waiting permission hooks wait on, read together in one query when a
    commit of this daemon or a write of another process may have answered one (a ``Pulse``,
    alive only while a hook waits): waiting prompts cost nothing while nothing happens."""

    def __init__(self, ctx: Ctx, stop: asyncio.Event) -> None:
        self.ctx = ctx
        self.stop = stop
        self.waiting: dict[str, set[asyncio.Future[store.Prompt | None]]] = {}
        self._pulse: Pulse | None = None
        self._task: asyncio.Task[None] | None = None

    async def settled(self, prompt_id: str) -> store.Prompt | None:
        """PROMPT_ID once it is answered or closed; None when there is no such prompt."""
        waiter: asyncio.Future[store.Prompt | None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(prompt_id, set()).add(waiter)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch(), name="hook-decisions")
        elif self._pulse is not None:
            self._pulse.poke()  # look at once: it may have been answered already
        try:
            return await waiter
        finally:
            waiters = self.waiting.get(prompt_id)
            if waiters is not None:
                waiters.discard(waiter)
                if not waiters:
                    del self.waiting[prompt_id]

    async def _watch(self) -> None:
        watch = monitor(self.ctx, DECISIONS)
        pulse = self._pulse = Pulse(self.ctx.db, poll_unseen=True)
        try:
            while self.waiting and not self.stop.is_set():
                began = pulse.begin()
                try:
                    await self._look()
                except Exception as exc:  # the database is away: the hooks keep waiting
                    await wait_or_stop(self.stop, watch.failed(exc))
                    continue
                watch.progressed()
                if not self.waiting:
                    return
                await pulse.wait(self.stop, began, float("inf"), DECISION_GAP_SECONDS)
        finally:
            pulse.close()
            self._pulse = None

    async def _look(self) -> None:
        ids = list(self.waiting)
        found = await asyncio.to_thread(lambda: store.get_prompts(self.ctx.db.connect(), ids))
        for prompt_id in ids:
            prompt = found.get(prompt_id)
            if prompt is not None and prompt.decision is None and prompt.closed_at is None:
                continue  # still pending
            for waiter in self.waiting.pop(prompt_id, set()):  # looked at no more
                if not waiter.done():
                    waiter.set_result(prompt)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()


class Channel:
    """One listening hook channel and the connections it serves."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.decisions: Decisions | None = None
        self.dir = hook_dir(ctx.state_dir)
        self.spool = self.dir / SPOOL_NAME
        self.lock = threading.Lock()
        """Held while reports are applied: the spool and socket reports, one at a time."""
        self.held: dict[str, int] = {}
        """How many connected ``PermissionRequest`` hooks wait on each prompt this daemon
        opened or was asked about (0 once the last one left): Claude Code holds its tool until
        one of them prints a decision or it answers its own dialog, so a prompt submitted
        meanwhile does not end that wait (``waits``, ``hook_apply.apply``)."""
        self._held_lock = threading.Lock()
        self.looking: set[str] = set()
        """Prompts whose agent's pane a look reads now."""
        self.unheard: set[str] = set()
        """Prompts whose dialog still showed when the last hook waiting on them had left:
        looked at again every ``UNHEARD_SECONDS`` until the dialog is gone (``recheck``)."""
        self.shown = asyncio.Event()
        """Set when a prompt joins ``unheard``: the channel's beat comes sooner (``rest``)."""
        self.handlers: set[asyncio.Task[Any]] = set()
        self.pruned_at = 0.0

    async def run(self, stop: asyncio.Event) -> None:
        watch = monitor(self.ctx, NAME)
        self.decisions = Decisions(self.ctx, stop)
        prepare(self.dir, self.spool)
        await asyncio.to_thread(self.apply_spool)
        path = self.dir / SOCKET_NAME
        server = await asyncio.start_unix_server(self.serve, sock=listen(path), limit=MAX_LINE)
        unclaimed = asyncio.create_task(self.look_unclaimed(stop), name="hook-unclaimed")
        try:
            while not await self.rest(stop):
                await asyncio.to_thread(self.apply_spool)
                await self.recheck()
                watch.progressed()
        finally:
            server.close()
            unclaimed.cancel()
            for task in list(self.handlers):
                task.cancel()
            self.decisions.close()
            with contextlib.suppress(OSError):
                path.unlink()

    # --- the socket -------------------------------------------------------------------------

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is None or len(self.handlers) >= MAX_CONNECTIONS:
            writer.close()  # the hook retries, or spools its report
            return
        self.handlers.add(task)
        try:
            await self._serve(reader, writer)
        except (OSError, asyncio.IncompleteReadError):
            pass  # the hook went away: it resends, or spooled its report
        finally:
            self.handlers.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            await asyncio.to_thread(hook_apply.refused, self.ctx.db, None, "report too long")
            await reply(writer, REFUSED, "report too long")
            return
        if not line.endswith(b"\n"):
            return
        try:
            raw = json.loads(line)
        except ValueError:
            await asyncio.to_thread(hook_apply.refused, self.ctx.db, None, "not JSON")
            await reply(writer, REFUSED, "not JSON")
            return
        try:
            report, prompt_id = await asyncio.to_thread(self.take, raw)
        except hook_apply.Refused as exc:
            await reply(writer, REFUSED, str(exc))
            return
        except Exception:  # the database is away, or a bug: no ack, the hook spools it
            log.exception("cannot apply a hook report")
            return
        if not report.permission:
            await reply(writer, OK)
            path = hook_apply.unflushed(report, self.ctx.db.shared)
            if path is not None:
                writer.close()  # the hook goes on; its harness writes the message meanwhile
                await self.keep_when_flushed(report, path)
            return
        if await self.await_decision(prompt_id, reader, writer):
            assert prompt_id is not None
            await self.look(prompt_id)

    async def keep_when_flushed(self, report: hook_apply.Report, path: str) -> None:
        """Keep PATH again once it holds the last message REPORT carries, or after
        ``FLUSH_SECONDS`` with what it holds then (the harness writes it without telling);
        the file is read again only when its size has changed."""
        last = str(report.data["last_assistant_message"])
        deadline = time.monotonic() + hook_apply.FLUSH_SECONDS
        size: int | None = None  # the first look reads it: the message may be there already
        while time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
            now = _size(path)
            if now == size:
                continue
            size = now
            root = report.who.transcript_root
            if await asyncio.to_thread(hook_apply.flushed, path, last, root):
                break
        else:
            log.warning(
                "the transcript %s did not end with the turn's last message %.0f s after its "
                "Stop hook: kept as it is",
                path,
                hook_apply.FLUSH_SECONDS,
            )
        await asyncio.to_thread(self.keep, report, path)

    def keep(self, report: hook_apply.Report, path: str) -> None:
        with self.lock:  # one copy at a time: each appends from where the stored one ends
            hook_apply.keep_transcript(self.ctx.db, report, path)

    def take(self, raw: object) -> tuple[hook_apply.Report, str | None]:
        """Check and apply RAW after what the spool holds (reports apply in written order)."""
        with self.lock:
            self._apply_spool()
            report = hook_apply.check(self.ctx.db, raw)
            prompt_id = hook_apply.apply(self.ctx.db, report, self.ctx.db.shared, self.waits)
            if report.permission and prompt_id is not None:
                self._hold(prompt_id, 1)  # before any other report is applied
            return report, prompt_id

    def waits(self, prompt: store.Prompt) -> bool:
        """Whether a ``PermissionRequest`` hook waits on PROMPT: one is connected; or none has
        been, since this daemon started, for a prompt such a hook opened (it has a tool): the
        hook is reconnecting to send its report again."""
        count = self.held.get(prompt.id)
        return bool(prompt.tool) if count is None else count > 0

    def _hold(self, prompt_id: str, by: int) -> None:
        with self._held_lock:
            self.held[prompt_id] = max(self.held.get(prompt_id, 0) + by, 0)

    async def await_decision(
        self, prompt_id: str | None, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        """Wait until PROMPT_ID is decided (send the decision; on the hook's acknowledgement
        close it as answered) or closed (send ``closed``); stop when the hook goes away.
        Whether it went away before either, or before it said it took the decision (its dialog
        was answered in the agent's terminal, or it was killed)."""
        assert self.decisions is not None, "the channel runs"
        if prompt_id is None:  # no prompt was opened for it
            await reply(writer, CLOSED)
            return False
        heard = asyncio.ensure_future(reader.read(1))
        settled = asyncio.ensure_future(self.decisions.settled(prompt_id))
        try:  # held since ``take`` opened or found the prompt
            done, _ = await asyncio.wait({heard, settled}, return_when=asyncio.FIRST_COMPLETED)
            if settled not in done:
                return True  # the hook went away
            found = settled.result()
            if found is None or found.decision is None:
                await reply(writer, CLOSED)
                return False
            await reply(writer, DECISION, hook_apply.decision_output(found))
            acked = await asyncio.wait_for(heard, ACK_SECONDS)
            if not acked:
                return True  # it went away before it took the decision
            await asyncio.to_thread(hook_apply.finish, self.ctx.db, found.id)
            return False
        except TimeoutError:
            return True  # no word that it took the decision: the pane tells
        finally:
            heard.cancel()
            settled.cancel()
            self._hold(prompt_id, -1)

    async def look(
        self, prompt_id: str, seconds: float = dialog_left.LOOK_SECONDS, tell: bool = True
    ) -> None:
        """Once no hook waits on PROMPT_ID, read its agent's pane for SECONDS for the dialog
        to be gone (``agent.attention.left``); a dialog that still shows is looked at again
        (``recheck``). One look at a time per prompt."""
        if prompt_id in self.looking:
            return
        self.looking.add(prompt_id)
        try:
            found = await asyncio.to_thread(
                dialog_left.look, self.ctx, prompt_id, lambda: self._left(prompt_id), seconds, tell
            )
        except Exception:  # the database or tmux is away: looked at again on the next beat
            log.log(logging.WARNING if tell else logging.DEBUG, "cannot look at %s", prompt_id)
            found = dialog_left.SHOWN
        finally:
            self.looking.discard(prompt_id)
        if found == dialog_left.SHOWN:
            self.unheard.add(prompt_id)
            self.shown.set()
        else:
            self.unheard.discard(prompt_id)

    async def rest(self, stop: asyncio.Event) -> bool:
        """Wait for the channel's next beat: ``SPOOL_SECONDS``, or ``UNHEARD_SECONDS`` while a
        dialog whose hook left still shows (also one found so meanwhile). True when STOP."""
        if not self.unheard:
            self.shown.clear()
            waits = [asyncio.ensure_future(stop.wait()), asyncio.ensure_future(self.shown.wait())]
            try:
                await asyncio.wait(
                    waits, timeout=SPOOL_SECONDS, return_when=asyncio.FIRST_COMPLETED
                )
            finally:
                for waiting in waits:
                    waiting.cancel()
            if stop.is_set() or not self.unheard:
                return stop.is_set()
        return await wait_or_stop(stop, UNHEARD_SECONDS)

    async def recheck(self) -> None:
        """Look briefly again at each dialog that still showed when its hook had left: Claude
        Code's own dialog waits in the terminal, and nothing reports when it is answered there."""
        for prompt_id in list(self.unheard):
            if self._left(prompt_id):
                await self.look(prompt_id, dialog_left.RECHECK_SECONDS, tell=False)
            else:
                self.unheard.discard(prompt_id)  # a hook waits on it again

    def _left(self, prompt_id: str) -> bool:
        return not self.held.get(prompt_id)

    async def look_unclaimed(self, stop: asyncio.Event) -> None:
        """After a restart: once the hooks that were waiting had ``RECONNECT_SECONDS`` to
        send their report again, look at the pane of each hook's prompt none came back for
        (its dialog was answered in the terminal while the daemon was away)."""
        listening = time.time()
        if await wait_or_stop(stop, RECONNECT_SECONDS):
            return
        pending = await asyncio.to_thread(self._hook_prompts, listening)
        await asyncio.gather(*(self.look(p) for p in pending if self._left(p)))

    def _hook_prompts(self, before: float) -> list[str]:
        """The open prompts that a permission hook opened (they name a tool) BEFORE then, an
        answer recorded for them or not (a prompt opened since is its hook's own connection's
        to look after)."""
        found = store.overdue(self.ctx.db.connect(), before, answered=True)
        return [p.id for p in found if p.tool]

    # --- the spool --------------------------------------------------------------------------

    def apply_spool(self) -> None:
        """Apply every spooled report, oldest first; forget old report ids once an hour."""
        with self.lock:
            self._apply_spool()
        now = time.time()
        if now - self.pruned_at >= PRUNE_SECONDS:
            with self.ctx.db.transaction() as tx:
                hook_tokens.prune(tx, now - hook_tokens.REPORTS_KEPT_SECONDS)
            self.pruned_at = now

    def _apply_spool(self) -> None:
        """Apply the shared spool's reports and each agent's own spool directory's
        (``<spool>/<hash>/``), each in written order."""
        try:
            names = sorted(os.listdir(self.spool))
        except FileNotFoundError:
            return
        for name in names:
            path = self.spool / name
            if name.startswith("."):
                _drop_stale(path)
            elif name.endswith(".json"):
                self._apply_file(path)
            elif path.is_dir() and not path.is_symlink():
                for inner in sorted(os.listdir(path)):
                    if inner.startswith("."):
                        _drop_stale(path / inner)
                    elif inner.endswith(".json"):
                        self._apply_file(path / inner)

    def _apply_file(self, path: Path) -> None:
        """Apply the spooled report at PATH (database errors leave it for the next pass),
        then delete it."""
        db = self.ctx.db
        try:
            with open_agent_file(path) as handle:
                raw = json.loads(handle.read(MAX_LINE + 1))
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            hook_apply.refused(db, None, "unreadable spooled report")
            path.unlink(missing_ok=True)
            return
        try:
            report = hook_apply.check(db, raw)
            if report.permission:
                hook_apply.refused(db, report.who.agent, "a permission request is not spooled")
            else:
                hook_apply.apply(db, report, db.shared, self.waits)
        except hook_apply.Refused:
            pass
        path.unlink(missing_ok=True)


async def reply(writer: asyncio.StreamWriter, word: str, text: str = "") -> None:
    """One reply line: WORD (``ok``, ``refused``, ``closed``, ``decision``), then TEXT."""
    line = f"{word} {text}" if text else word
    writer.write(line.replace("\n", " ").encode("utf-8") + b"\n")
    await writer.drain()


def prepare(where: Path, spool: Path) -> None:
    """The channel's directory and spool, private to the daemon's user (0700)."""
    for path in (where, spool):
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(path, 0o700)


def listen(path: Path) -> socket.socket:
    """A listening unix socket at PATH (a stale one from a daemon that died is replaced;
    the state dir's lock says no other daemon uses it), mode 0600."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        if len(str(path)) < _SHORT_PATH:
            sock.bind(str(path))
        else:  # AF_UNIX takes about 108 bytes: bind through the directory's descriptor
            fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
            try:
                sock.bind(f"/proc/self/fd/{fd}/{path.name}")
            finally:
                os.close(fd)
        os.chmod(path, 0o600)
        sock.listen(MAX_CONNECTIONS)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def _drop_stale(path: Path) -> None:
    """Remove a temporary file a hook left behind (it died between write and rename)."""
    with contextlib.suppress(OSError):
        if time.time() - path.stat().st_mtime > STALE_TMP_SECONDS:
            path.unlink()


def _size(path: str) -> int:
    """The size of the file at PATH (-1 when it cannot be read): one stat, no read."""
    try:
        return os.stat(path).st_size
    except OSError:
        return -1
