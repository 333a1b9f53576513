"""Write-backs through the outbox (SPEC §12): queued with the decision, drained with retries.

Enqueueing (``enqueue_reaction``, ``enqueue_comment``) writes a row inside the caller's open
transaction, so a write-back exists exactly when the decision that caused it was committed;
the same key twice is stored once. After the commit the caller calls ``wake(ctx)`` (safe from
any thread) so the drain starts at once; without it the drain still finds the row within
``pulse.CHANGE_GAP_SECONDS`` of the commit (the drain waits on a ``Pulse``, decision 0066: a
row a CLI command queued is found as soon, and with nothing queued the drain does not run).

Draining: ``outbox_loop`` (the daemon's background task) and ``drain_pending`` (one bounded
pass at the end of a CLI command) claim due rows and post them, oldest first, with one
long-lived ``GitHubClient``:

- posted → ``done`` and ``writeback.posted``;
- a rate limit → due again at its reset (``Retry-After`` or ``X-RateLimit-Reset``), not before;
- 5xx, timeouts, refused connections → due again after the backoff ``RETRY`` (1 s doubling,
  at most 5 minutes), for ever: a write-back ends only posted or refused;
- a refusal (a 4xx such as 422 or 404, no token) → ``failed``, one ``writeback.failed``, never
  retried (``the-loop outbox replay ID`` makes it due again on purpose).

Never posted twice: reactions are idempotent on GitHub. A comment carries a hidden marker
naming its row; when a try may have reached GitHub without its answer reaching us (a timeout,
a 5xx, a crash while ``sending``), the next try first looks for that marker among the item's
comments and records the post it finds instead of posting again (decision 0010).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import os
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast, get_args

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from the_loop import events as ev
from the_loop.backoff import Backoff
from the_loop.context import Ctx
from the_loop.errors import Conflict, LoopError, NotFound, Unavailable
from the_loop.pulse import CHANGE_GAP_SECONDS, Pulse, soonest
from the_loop.refs import WorkItemRef
from the_loop.store import Database
from the_loop.store import outbox as store
from the_loop.store.conn import Connection
from the_loop.store.outbox import (
    CommentPayload,
    Enqueued,
    NewWrite,
    OutboxItem,
    OutboxStatus,
    ReactionPayload,
)
from the_loop.supervise import TRANSIENT, monitor

if TYPE_CHECKING:
    from the_loop.config import GitHubConfig
    from the_loop.github.api import GitHubClient

SOURCE = "outbox"
GITHUB = "github"
LEASE_SECONDS = 60.0
RETRY = Backoff(base=1.0, cap=300.0)
"""When a write-back that met a transient failure is tried again: 1 s doubling to 5 minutes."""
RECOVER_EVERY_SECONDS = 30.0
BATCH = 5
CLI_PASS_LIMIT = 500
VERIFY_WINDOW = timedelta(minutes=10)

_LOOPS: weakref.WeakKeyDictionary[asyncio.Event, asyncio.AbstractEventLoop] = (
    weakref.WeakKeyDictionary()
)


# --- enqueue --------------------------------------------------------------------------------


def enqueue_reaction(
    tx: Connection,
    ref: WorkItemRef,
    content: str,
    *,
    what: str,
    comment_id: int | None = None,
    key: str | None = None,
) -> Enqueued:
    """Queue a reaction CONTENT on COMMENT_ID (else on REF itself) in transaction TX.

    The default KEY is the reaction itself (GitHub keeps one per content and target), so the
    same reaction queued twice is stored once."""
    on = f"comment:{comment_id}" if comment_id is not None else "item"
    new = NewWrite(
        key=key or f"{GITHUB}:{ref}:reaction:{on}:{content}",
        target=GITHUB,
        what=what,
        work_item=str(ref),
        payload=ReactionPayload(content=content, comment_id=comment_id),
    )
    return store.insert(tx, new)


def enqueue_comment(
    tx: Connection, ref: WorkItemRef, text: str, *, what: str, key: str | None = None
) -> Enqueued:
    """Queue comment TEXT on REF in transaction TX (posted with the self-marker and a hidden
    outbox marker). Without KEY the comment is never taken for another one; give a KEY (e.g.
    the delivery id that caused it) to store a repeated enqueue once."""
    from the_loop.github.writeback import with_outbox_marker  # lazy: start-up

    token = uuid.uuid4().hex[:16]
    new = NewWrite(
        key=key or f"{GITHUB}:{ref}:comment:{token}",
        target=GITHUB,
        what=what,
        work_item=str(ref),
        payload=CommentPayload(body=with_outbox_marker(text, token), token=token),
    )
    return store.insert(tx, new)


def text_key(*parts: str) -> str:
    """A stable idempotency key from PARTS (long texts are hashed)."""
    return ":".join(
        p if len(p) <= 80 else hashlib.sha256(p.encode()).hexdigest()[:24] for p in parts
    )


def wake(ctx: Ctx) -> None:
    """Tell this process's drain task (if one runs) that rows were committed; any thread."""
    loop = _LOOPS.get(ctx.outbox_wake)
    if loop is None:
        return
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        ctx.outbox_wake.set()
        return
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
        loop.call_soon_threadsafe(ctx.outbox_wake.set)


# --- drain ----------------------------------------------------------------------------------


@dataclass
class DrainReport:
    """What one pass did: rows claimed, posted, put back to wait, and refused for good."""

    claimed: int = 0
    posted: int = 0
    waiting: int = 0
    failed: int = 0

    def add(self, other: DrainReport) -> None:
        self.claimed += other.claimed
        self.posted += other.posted
        self.waiting += other.waiting
        self.failed += other.failed


def owner_id() -> str:
    """Who claims rows in this process: ``HOST:PID``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _claimer_alive(owner: str, *, this_process: bool) -> bool:
    """Whether the claimer OWNER may still be sending: a process of this host that no longer
    exists is not; this process is only when THIS_PROCESS (False at start, when none of its
    claims can be in flight); a claimer on another host is taken as alive (its lease decides)."""
    host, _, pid = owner.rpartition(":")
    if host != socket.gethostname():
        return True
    if owner == owner_id():
        return this_process
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def recover(ctx: Ctx, *, at_start: bool = False) -> int:
    """Make rows left ``sending`` by a process that is gone due again (comments to be
    verified first); AT_START also takes back this process's own claims. Returns how many."""
    return store.recover(ctx.db, functools.partial(_claimer_alive, this_process=not at_start))


_RECOVERED: weakref.WeakSet[Database] = weakref.WeakSet()
_RECOVER_LOCK = threading.Lock()


def recover_at_start(ctx: Ctx) -> int:
    """``recover(at_start=True)`` once per process and database: every drain task (GitHub's,
    Slack's) calls it before its first claim, and none takes back another's fresh claims."""
    with _RECOVER_LOCK:
        if ctx.db in _RECOVERED:
            return 0
        found = recover(ctx, at_start=True)
        _RECOVERED.add(ctx.db)
        return found


def lease_seconds(config: GitHubConfig, rows: int = 1) -> float:
    """How long a claim of ROWS rows lasts: longer than posting them all can take."""
    return LEASE_SECONDS + rows * config.timeout_seconds * (config.retries + 2)


async def drain_once(
    ctx: Ctx, client: GitHubClient, *, now: float | None = None, limit: int = BATCH
) -> DrainReport:
    """Claim up to LIMIT rows due at NOW (default: the current time) and try each once.
    Nothing is claimed while ``github.enabled`` is off: the rows wait until it is on again."""
    if not ctx.config.github.enabled:
        return DrainReport()
    owner = owner_id()
    items = await asyncio.to_thread(
        store.claim_due, ctx.db, owner, lease_seconds(ctx.config.github, limit), now, limit, GITHUB
    )
    report = DrainReport(claimed=len(items))
    for item in items:
        report.add(await send(ctx, client, item, owner))
    return report


async def send(ctx: Ctx, client: GitHubClient, item: OutboxItem, owner: str) -> DrainReport:
    """Post one claimed ITEM and record the outcome (done, waiting, or failed)."""
    from the_loop.github.api import RateLimited  # lazy: start-up (httpx, the GitHub client)

    try:
        result = await _post(client, ctx.config.github, item)
    except RateLimited as exc:
        wait_until = max(exc.reset_at, time.time() + 1.0)
        return await _wait(ctx, item, owner, str(exc), wait_until, item.verify)
    except Unavailable as exc:
        comment = isinstance(item.payload, CommentPayload)
        again = RETRY.next_at(item.attempts)
        return await _wait(ctx, item, owner, str(exc), again, item.verify or comment)
    except LoopError as exc:
        return await _refused(ctx, item, owner, exc.message)
    except Exception as exc:  # a bug must not wedge the outbox: keep the row, retry later
        again = RETRY.next_at(item.attempts)
        return await _wait(ctx, item, owner, repr(exc), again, True)
    await asyncio.to_thread(store.mark_done, ctx.db, item.id, result)
    await _emit_item(ctx, "writeback.posted", item, result=result)
    return DrainReport(posted=1)


async def _wait(
    ctx: Ctx, item: OutboxItem, owner: str, error: str, at: float, verify: bool
) -> DrainReport:
    await asyncio.to_thread(store.mark_retry, ctx.db, item.id, owner, error, at, verify)
    return DrainReport(waiting=1)


async def _refused(ctx: Ctx, item: OutboxItem, owner: str, error: str) -> DrainReport:
    if await asyncio.to_thread(store.mark_failed, ctx.db, item.id, owner, error):
        await _emit_item(ctx, "writeback.failed", item, error=error)
    return DrainReport(failed=1)


def item_event(ctx: Ctx, type_: str, item: OutboxItem, source: str = SOURCE, **extra: Any) -> None:
    """Record event TYPE_ about outbox ITEM (its work item, what, kind, id and attempts)."""
    ev.emit(
        ctx.db,
        type_,
        source=source,
        work_item=item.work_item,
        what=item.what,
        kind=item.kind.value,
        outboxId=item.id,
        attempts=item.attempts,
        **extra,
    )


async def _emit_item(ctx: Ctx, type_: str, item: OutboxItem, **extra: Any) -> None:
    """``item_event`` off the event loop."""
    await asyncio.to_thread(item_event, ctx, type_, item, **extra)


async def _post(client: GitHubClient, config: GitHubConfig, item: OutboxItem) -> str:
    """Send ITEM to GitHub; what GitHub answered, as a line for the row's ``result``."""
    from the_loop.github import writeback  # lazy: start-up (httpx, the GitHub client)
    from the_loop.github.api import GitHubError, ReactionContent

    if item.target != GITHUB or item.work_item is None:
        raise GitHubError(f"outbox row {item.id}: no GitHub work item to write back to")
    ref = WorkItemRef.parse(item.work_item)
    payload = item.payload
    if isinstance(payload, ReactionPayload):
        if payload.content not in get_args(ReactionContent):
            raise GitHubError(f"outbox row {item.id}: {payload.content!r} is not a reaction")
        content = cast("ReactionContent", payload.content)
        reaction = await writeback.react(
            client, config, ref, content, comment_id=payload.comment_id
        )
        return "skipped: github.reactions is off" if reaction is None else f"reaction {reaction.id}"
    if not isinstance(payload, CommentPayload):
        raise GitHubError(f"outbox row {item.id} is not a GitHub write-back")
    if item.verify:
        since = item.created_at - VERIFY_WINDOW
        found = await writeback.find_outbox_comment(client, ref, payload.token, since=since)
        if found is not None:
            return f"comment {found.id} (found already posted) {found.html_url}"
    comment = await writeback.post_comment(client, ref, payload.body)
    return f"comment {comment.id} {comment.html_url}"


def github_client(config: GitHubConfig, db: Database | None = None) -> GitHubClient:
    """The client the drain posts with (per-request timeout and retries from CONFIG), honouring
    the rate limits any process of this state recorded (in DB)."""
    from the_loop.github.api import GitHubClient  # lazy: start-up (httpx, the GitHub client)
    from the_loop.github.rate_gates import SqliteRateGates  # lazy: start-up

    return GitHubClient.from_config(
        config,
        retries=config.retries,
        timeout=config.timeout_seconds,
        gates=SqliteRateGates(db) if db is not None else None,
    )


def _client_key(config: GitHubConfig) -> tuple[str, str, float, int]:
    return (config.api_url, config.token_env, config.timeout_seconds, config.retries)


async def outbox_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's drain task: recover rows a dead process left ``sending`` (at start and
    every ``RECOVER_EVERY_SECONDS``), then post what is due until STOP, waiting on a ``Pulse``
    (``the_loop.pulse``) for a ``wake``, a commit or another process's write, or the next row
    due. Database errors are retried with backoff while the task reports itself stalled
    (``the_loop.supervise``); the event loop never waits on SQLite."""
    _LOOPS[ctx.outbox_wake] = asyncio.get_running_loop()
    drain = _Drainer(ctx)
    watch = monitor(ctx, "outbox")
    pulse = Pulse(ctx.db, urgent=ctx.outbox_wake, poll_unseen=True)
    try:
        while not stop.is_set():
            began = pulse.begin()
            try:
                due = await drain.step()
                watch.progressed()
            except TRANSIENT as exc:
                due = time.time() + watch.failed(exc)
            if await pulse.wait(stop, began, due, CHANGE_GAP_SECONDS, due_gap=0.0):
                break
    finally:
        pulse.close()
        _LOOPS.pop(ctx.outbox_wake, None)
        await drain.close()


class _Drainer:
    """The state of the drain task: its client (rebuilt when the ``github`` section changes)
    and when it last recovered abandoned claims."""

    def __init__(self, ctx: Ctx) -> None:
        self.ctx = ctx
        self.client: GitHubClient | None = None
        self.key: tuple[str, str, float, int] | None = None
        self.recovered_at: float | None = None

    async def step(self) -> float:
        """Recover when due, then drain one batch; when (``time.time``) to step again with
        nothing happening."""
        now = time.time()
        if self.recovered_at is None or now - self.recovered_at >= RECOVER_EVERY_SECONDS:
            first = self.recovered_at is None
            await asyncio.to_thread(recover_at_start if first else recover, self.ctx)
            self.recovered_at = now
        report = await drain_once(self.ctx, await self._client())
        if report.claimed:
            return now
        due = await asyncio.to_thread(store.next_due, self.ctx.db, GITHUB)
        return soonest(due, self.recovered_at + RECOVER_EVERY_SECONDS)

    async def _client(self) -> GitHubClient:
        config = self.ctx.config.github
        if self.client is None or self.key != _client_key(config):
            await self.close()
            self.client, self.key = github_client(config, self.ctx.db), _client_key(config)
        return self.client

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
            self.client = None


def drain_pending(ctx: Ctx, *, since: float | None = None) -> DrainReport:
    """One bounded pass for a process without the drain task (a CLI command): post every row
    due now, each tried at most once, leaving what failed transiently for a later pass (the
    daemon's). With SINCE, nothing happens unless a row was enqueued at or after SINCE.
    Synchronous; must not be called from a running event loop."""
    if since is not None and not store.created_since(ctx.db, since):
        return DrainReport()
    if store.next_due(ctx.db, GITHUB) is None:
        return DrainReport()

    async def run() -> DrainReport:
        total = DrainReport()
        async with github_client(ctx.config.github, ctx.db) as client:
            started = time.time()
            while total.claimed < CLI_PASS_LIMIT:
                report = await drain_once(ctx, client, now=started)
                total.add(report)
                if not report.claimed:
                    break
        return total

    return asyncio.run(run())


# --- operator verbs -------------------------------------------------------------------------


class OutboxSummary(BaseModel):
    """Rows by status: what waits to be posted and what was refused for good."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    pending: int = 0
    sending: int = 0
    failed: int = 0
    done: int = 0


def summary(ctx: Ctx) -> OutboxSummary:
    """How many write-backs wait (pending, sending), failed for good, and were posted."""
    return OutboxSummary.model_validate(store.counts(ctx.db))


def list_items(ctx: Ctx, status: OutboxStatus | None = None, limit: int = 100) -> list[OutboxItem]:
    """Outbox rows, newest first, optionally of one STATUS."""
    return store.list_items(ctx.db, status, limit)


def replay(ctx: Ctx, item_id: int) -> OutboxItem:
    """Make row ITEM_ID due now (a failed one, or one waiting for its next try).

    ``NotFound`` for an unknown id; ``Conflict`` for a row already posted or being sent."""
    item = store.replay(ctx.db, item_id)
    if item is None:
        raise NotFound(f"no outbox item {item_id}")
    if item.status is OutboxStatus.done:
        raise Conflict(f"outbox item {item_id} was already posted ({item.result})")
    if item.status is OutboxStatus.sending:
        raise Conflict(f"outbox item {item_id} is being sent by {item.claimed_by}")
    wake(ctx)
    return item


def send_now(ctx: Ctx, item_id: int) -> OutboxItem | None:
    """Claim row ITEM_ID when pending and try it once, in this process (no daemon running);
    the row as it is afterwards, or None when it could not be claimed."""
    owner = owner_id()
    found = store.get(ctx.db, item_id)
    if found is not None and found.target != GITHUB:
        return found  # the daemon's Slack task sends it
    item = store.claim(ctx.db, item_id, owner, lease_seconds(ctx.config.github))
    if item is None:
        return None
    claimed = item

    async def run() -> None:
        async with github_client(ctx.config.github, ctx.db) as client:
            await send(ctx, client, claimed, owner)

    asyncio.run(run())
    return store.get(ctx.db, item_id)
