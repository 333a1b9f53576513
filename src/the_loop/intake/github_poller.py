"""The GitHub poller, for hosts GitHub cannot reach: the same work events, polled.

Per repository, one conditional listing of the open items that carry ``routing.label``: an
unchanged listing is answered 304 and costs no rate limit, so an idle cycle is one free request
per repository. Items whose ``updated_at`` moved are read further (their new comments, and for
pull requests their reviews and review comments) and become work events built directly from
the API objects (``github.poll_events``, synthetic ids ``poll-comment-<id>``,
``poll-review-<id>``, ``poll-review-comment-<id>``), fed through the durable inbox exactly like
a webhook (``dispatch.dispatch_work``: same dedupe, same exactly-once processing, in order).
The first sight of an item is a baseline: old chatter is never delivered, but the newest
comment the engine would take as an authorized start (``engine.is_start_request``) is
honoured. After a complete listing, every live session of the repository whose item left the
listing is owed a closure check (``store.poll``: persisted), answered with one request in that
cycle and, when GitHub does not answer, again in every later cycle (a 304 one too) until it
does; closed or merged produces the close event a webhook would have.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from the_loop import engine
from the_loop import events as ev
from the_loop.backoff import Backoff
from the_loop.context import Ctx
from the_loop.github import poll_events
from the_loop.github.api import (
    GitHubClient,
    GitHubNotFound,
    GitHubUnavailable,
    Item,
    RateLimited,
)
from the_loop.github.etag_store import SqliteEtagStore
from the_loop.github.poll_events import iso as _iso
from the_loop.github.rate_gates import SqliteRateGates
from the_loop.intake import dispatch
from the_loop.refs import WorkItemRef
from the_loop.store import poll as ledger
from the_loop.store import sessions as session_store
from the_loop.store.poll import CycleRecord, SeenItem
from the_loop.supervise import monitor
from the_loop.wire import iso
from the_loop.work import WorkEvent

SOURCE = "poller"


@dataclass
class RepoResult:
    repo: str
    calls: int = 0
    not_modified: int = 0
    dispatched: int = 0
    closures: int = 0
    error: str | None = None


@dataclass
class CycleResult:
    started_at: float
    seconds: float = 0.0
    repos: list[RepoResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.error is None for r in self.repos)


class Poller:
    """One poller per daemon (or per ``poll --once``); keeps its client and its gates."""

    def __init__(self, ctx: Ctx, client: GitHubClient | None = None) -> None:
        self.ctx = ctx
        cfg = ctx.config.github
        self.client = client or GitHubClient.from_config(
            cfg,
            etags=SqliteEtagStore(ctx.db),
            gates=SqliteRateGates(ctx.db),
            timeout=cfg.timeout_seconds,
            retries=cfg.retries,
        )

    @property
    def host(self) -> str:
        """The GitHub host the work events' refs carry."""
        return dispatch.github_host(self.ctx)

    async def cycle(self) -> CycleResult:
        """Poll every configured repository once; never raises for GitHub's failures."""
        result = CycleResult(started_at=time.time())
        for repo in self.ctx.config.github.repos:
            result.repos.append(await self._repo(repo))
        result.seconds = round(time.time() - result.started_at, 3)
        await asyncio.to_thread(self._record, result)
        return result

    def _record(self, result: CycleResult) -> None:
        errors = [f"{r.repo}: {r.error}" for r in result.repos if r.error]
        ledger.record_cycle(
            self.ctx.db,
            CycleRecord(
                started_at=result.started_at,
                seconds=result.seconds,
                repos=len(result.repos),
                requests=sum(r.calls for r in result.repos),
                not_modified=sum(r.not_modified for r in result.repos),
                ok=not errors,
                error="; ".join(errors) or None,
            ),
        )
        ev.emit(
            self.ctx.db,
            "poll.cycle",
            source=SOURCE,
            repos=len(result.repos),
            requests=sum(r.calls for r in result.repos),
            seconds=result.seconds,
            notModified=sum(r.not_modified for r in result.repos),
            dispatched=sum(r.dispatched for r in result.repos),
            ok=not errors,
        )

    async def _repo(self, repo: str) -> RepoResult:
        out = RepoResult(repo)
        try:
            await self._poll_repo(repo, out)
        except RateLimited as exc:
            out.error = f"rate limited until {iso(exc.reset_at)}"
            ev.emit(
                self.ctx.db,
                "poll.rate_limited",
                source=SOURCE,
                repo=repo,
                resetAt=iso(exc.reset_at),
                secondary=exc.secondary,
            )
        except GitHubUnavailable as exc:
            out.error = str(exc)
            ev.emit(self.ctx.db, "poll.error", source=SOURCE, repo=repo, error=str(exc))
        except Exception as exc:  # the poller cycle edge: a 4xx or a bug in one repository is
            # reported and closes nothing; the other repositories and the next cycle go on
            out.error = str(exc) or repr(exc)
            ev.emit(self.ctx.db, "poll.error", source=SOURCE, repo=repo, error=out.error)
        return out

    async def _poll_repo(self, repo: str, out: RepoResult) -> None:
        out.calls += 1
        listing = await self.client.list_open_items(repo, self.ctx.config.routing.label)
        if listing.not_modified:
            out.not_modified += 1
        else:
            known = await asyncio.to_thread(lambda: ledger.seen(self.ctx.db.connect(), repo))
            for item in listing.items:
                await self._item(repo, item, known.get(item.number), out)
            if listing.complete:
                listed = {item.number for item in listing.items}
                await asyncio.to_thread(self._owe_closure_checks, repo, listed)
        await self._check_closures(repo, out)

    async def _item(self, repo: str, item: Item, seen: SeenItem | None, out: RepoResult) -> None:
        # GitHub's timestamps have one-second resolution: the comment count tells two updates
        # within one second apart, and a pull request (reviews) is always read again.
        updated = f"{_iso(item.updated_at)}|{item.comments}"
        first = seen is None or seen.state != "open"
        if not first and seen is not None and seen.updated_at == updated and not item.is_pull:
            return
        if first or seen is None:
            baseline_id = await self._first_sight(repo, item, out)
            baseline = updated
        else:
            await self._new_activity(repo, item, seen, out)
            baseline, baseline_id = seen.baseline_at, seen.baseline_comment_id
        remembered = SeenItem(
            repo, item.number, item.is_pull, "open", updated, baseline, baseline_id
        )
        await asyncio.to_thread(ledger.remember, self.ctx.db, remembered)

    async def _first_sight(self, repo: str, item: Item, out: RepoResult) -> int:
        """Baseline: deliver nothing old except the newest unprocessed authorized start;
        returns the newest comment id seen (later comments are new)."""
        out.calls += 1
        comments = (await self.client.list_item_comments(repo, item.number)).items
        newest = max((c.id for c in comments), default=0)
        config = self.ctx.config
        for comment in reversed(comments):
            if engine.is_start_request(comment.body, comment.user.login, config):
                await self._send(poll_events.comment_event(repo, item, comment, self.host), out)
                return newest
        if not config.routing.require_start_command:
            labeled = poll_events.labeled_event(repo, item, config.routing.label, self.host)
            await self._send(labeled, out)
        return newest

    async def _new_activity(self, repo: str, item: Item, seen: SeenItem, out: RepoResult) -> None:
        out.calls += 1
        comments = await self.client.list_item_comments(
            repo, item.number, since=seen.updated_at.split("|")[0]
        )
        for comment in comments.items:
            if comment.id > seen.baseline_comment_id:
                await self._send(poll_events.comment_event(repo, item, comment, self.host), out)
        if item.is_pull:
            await self._reviews(repo, item, seen, out)

    async def _reviews(self, repo: str, item: Item, seen: SeenItem, out: RepoResult) -> None:
        out.calls += 2
        reviews = await self.client.list_reviews(repo, item.number)
        for review in reviews.items:
            if review.submitted_at and _iso(review.submitted_at) >= seen.baseline_at:
                await self._send(poll_events.review_event(repo, item, review, self.host), out)
        notes = await self.client.list_repo_review_comments(
            repo, since=seen.updated_at.split("|")[0]
        )
        for note in notes.items:
            if note.number == item.number and _iso(note.created_at) >= seen.baseline_at:
                event = poll_events.review_comment_event(repo, item, note, self.host)
                await self._send(event, out)

    async def _send(self, event: WorkEvent, out: RepoResult) -> None:
        """Through the durable inbox and processed now, exactly like a webhook delivery."""
        result = await asyncio.to_thread(dispatch.dispatch_work, self.ctx, event, "poll")
        if not result.duplicate:
            out.dispatched += 1

    def _owe_closure_checks(self, repo: str, listed: set[int]) -> None:
        """After a complete listing: every live session of REPO whose item is not LISTED is
        owed a closure check (persisted, so a failed check is retried, across restarts too)."""
        checks = [
            ledger.ClosureCheck(repo, number, work_item)
            for work_item, number in self._live_items(repo)
            if number not in listed
        ]
        ledger.owe_closure_checks(self.ctx.db, repo, checks)

    async def _check_closures(self, repo: str, out: RepoResult) -> None:
        """Answer the closure checks owed for REPO (every cycle, a 304 one too): closed or
        merged produces the close a webhook would have; still open leaves the session alone.
        A check GitHub does not answer stays owed and ends the repository's cycle (an
        unreachable API closes nothing); a session closed meanwhile owes nothing."""
        db = self.ctx.db
        checks = await asyncio.to_thread(lambda: ledger.closure_checks(db.connect(), repo))
        if not checks:
            return
        live = {number for _, number in await asyncio.to_thread(self._live_items, repo)}
        for check in checks:
            if check.number in live:
                try:
                    await self._check_closure(repo, check, out)
                except GitHubNotFound as exc:  # the item is gone: nothing to wait for
                    ev.emit(db, "poll.error", source=SOURCE, repo=repo, error=str(exc))
                except GitHubUnavailable as exc:
                    await asyncio.to_thread(ledger.closure_failed, db, repo, check.number, str(exc))
                    raise
            await asyncio.to_thread(ledger.closure_answered, db, repo, check.number)

    async def _check_closure(self, repo: str, check: ledger.ClosureCheck, out: RepoResult) -> None:
        out.calls += 1
        issue = await self.client.get_issue(repo, check.number)
        if issue.state != "closed":
            return
        merged = False
        if issue.is_pull:
            out.calls += 1
            merged = (await self.client.get_pull(repo, check.number)).merged
        await self._closed(repo, issue, merged, out)
        ev.emit(
            self.ctx.db,
            "poll.closure_detected",
            source=SOURCE,
            work_item=check.work_item,
            merged=merged,
        )
        out.closures += 1

    def _live_items(self, repo: str) -> list[tuple[str, int]]:
        found = []
        for rec in session_store.list_sessions(self.ctx.db.connect()):
            if not rec.live:
                continue
            ref = WorkItemRef.parse(rec.work_item)
            if ref.full_name.lower() == repo.lower():
                found.append((rec.work_item, ref.number))
        return found

    async def _closed(self, repo: str, item: Item, merged: bool, out: RepoResult) -> None:
        await self._send(poll_events.closed_event(repo, item, merged, self.host), out)
        await asyncio.to_thread(
            ledger.remember,
            self.ctx.db,
            SeenItem(
                repo,
                item.number,
                item.is_pull,
                "closed",
                _iso(item.updated_at),
                _iso(item.updated_at),
            ),
        )


MAX_BACKOFF_SECONDS = 300.0


def next_wait(interval: float, failures: int) -> float:
    """Seconds until the next cycle: the interval, doubled per consecutive failed cycle (at
    most ``MAX_BACKOFF_SECONDS``, never below the interval), without jitter."""
    cycles = Backoff(base=interval, cap=max(interval, MAX_BACKOFF_SECONDS), jitter=0.0)
    return cycles.delay(failures + 1)  # step 1 (the interval) follows a good cycle


async def poll_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's poller: one cycle every ``github.poller.intervalSeconds`` (reloadable),
    backing off while cycles fail (GitHub down, timing out, rate limiting). A database fault
    raised by a cycle ends this run; the supervisor (``the_loop.supervise``) restarts it."""
    watch = monitor(ctx, "poller")
    poller: Poller | None = None
    failures = 0
    try:
        while not stop.is_set():
            cfg = ctx.config.github
            if cfg.enabled and cfg.poller.enabled:
                poller = poller or Poller(ctx)
                result = await poller.cycle()
                failures = 0 if result.ok else failures + 1
            watch.progressed()
            wait = next_wait(ctx.config.github.poller.interval_seconds, failures)
            try:
                await asyncio.wait_for(stop.wait(), timeout=wait)
            except TimeoutError:
                continue
    finally:
        if poller is not None:
            await poller.client.aclose()
