"""The GitHub poller, for hosts GitHub cannot reach: the same work events, polled.

Per repository, one conditional listing of the open items that carry ``routing.label``: an
unchanged listing is answered 304 and costs no rate limit, so an idle cycle is one free request
per repository. Items whose ``updated_at`` moved are read further (their new comments, and for
pull requests their reviews and review comments) and become webhook-shaped deliveries with
synthetic ids (``poll-comment-<id>``, ``poll-review-<id>``, ``poll-review-comment-<id>``), fed
through the durable inbox exactly like a webhook. The first sight of an item is a baseline: old
chatter is never delivered, but an authorized start that was never processed is honoured.
After a complete listing, every live session of the repository whose item left the listing is
checked with one request; closed or merged produces the close event a webhook would have.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from the_loop import dispatch, engine
from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.github.api import (
    Comment,
    GitHubClient,
    GitHubUnavailable,
    Item,
    RateLimited,
    Review,
    ReviewComment,
)
from the_loop.github.etag_store import SqliteEtagStore
from the_loop.refs import WorkItemRef
from the_loop.store import poll as ledger
from the_loop.store import sessions as session_store
from the_loop.store.poll import CycleRecord, SeenItem

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


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _user(login: str, kind: str = "User") -> dict[str, Any]:
    return {"login": login, "type": kind}


def _repository(repo: str) -> dict[str, Any]:
    owner, name = repo.split("/", 1)
    return {"full_name": repo, "name": name, "owner": {"login": owner}}


def _issue_json(item: Item) -> dict[str, Any]:
    data: dict[str, Any] = {
        "number": item.number,
        "title": item.title,
        "body": item.body,
        "state": item.state,
        "html_url": item.html_url,
        "user": _user(item.user.login, item.user.type),
        "labels": [{"name": n} for n in item.label_names],
        "updated_at": _iso(item.updated_at),
        "author_association": item.author_association,
    }
    if item.is_pull:
        data["pull_request"] = {"merged_at": None}
    return data


class Poller:
    """One poller per daemon (or per ``poll --once``); keeps its client and its gates."""

    def __init__(self, ctx: Ctx, client: GitHubClient | None = None) -> None:
        self.ctx = ctx
        cfg = ctx.config.github
        self.client = client or GitHubClient.from_config(
            cfg, etags=SqliteEtagStore(ctx.db), timeout=cfg.timeout_seconds, retries=cfg.retries
        )

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
            out.error = f"rate limited until {exc.reset_at}"
            ev.emit(
                self.ctx.db,
                "poll.rate_limited",
                source=SOURCE,
                repo=repo,
                resetAt=exc.reset_at,
                secondary=exc.secondary,
            )
        except GitHubUnavailable as exc:
            out.error = str(exc)
            ev.emit(self.ctx.db, "poll.error", source=SOURCE, repo=repo, error=str(exc))
        except Exception as exc:  # a 4xx or a bug: report, close nothing, poll again later
            out.error = str(exc) or repr(exc)
            ev.emit(self.ctx.db, "poll.error", source=SOURCE, repo=repo, error=out.error)
        return out

    async def _poll_repo(self, repo: str, out: RepoResult) -> None:
        out.calls += 1
        listing = await self.client.list_open_items(repo, self.ctx.config.routing.label)
        if listing.not_modified:
            out.not_modified += 1
            return
        known = await asyncio.to_thread(ledger.seen, self.ctx.db.connect(), repo)
        listed = {item.number: item for item in listing.items}
        for item in listing.items:
            await self._item(repo, item, known.get(item.number), out)
        if listing.complete:
            await self._reconcile(repo, set(listed), out)

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
        routing = self.ctx.config.routing
        allowed = {u.lower() for u in routing.authorized_users}
        for comment in reversed(comments):
            scan = engine.scan_commands(comment.body, routing.keywords)
            if comment.user.login.lower() in allowed and (
                engine.Keyword.START in scan.keywords or engine.Keyword.DO in scan.keywords
            ):
                await self._dispatch_comment(repo, item, comment, out)
                return newest
        if not routing.require_start_command:
            await self._dispatch_labeled(repo, item, out)
        return newest

    async def _dispatch_labeled(self, repo: str, item: Item, out: RepoResult) -> None:
        """The item as if just labelled by its author (label arming, SPEC §6 rule 5)."""
        label = self.ctx.config.routing.label
        payload: dict[str, Any] = {
            "action": "labeled",
            "label": {"name": label},
            "repository": _repository(repo),
            "sender": _user(item.user.login, item.user.type),
        }
        delivery = f"poll-labeled-{repo}-{item.number}-{_iso(item.updated_at)}"
        if item.is_pull:
            payload.update(number=item.number, pull_request=self._pull_json(item))
            await self._send("pull_request", delivery, payload, out)
        else:
            payload["issue"] = _issue_json(item)
            await self._send("issues", delivery, payload, out)

    def _pull_json(self, item: Item) -> dict[str, Any]:
        data = _issue_json(item)
        data.pop("pull_request", None)
        data.update({"merged": False, "head": {"ref": ""}})
        return data

    async def _new_activity(self, repo: str, item: Item, seen: SeenItem, out: RepoResult) -> None:
        out.calls += 1
        comments = await self.client.list_item_comments(
            repo, item.number, since=seen.updated_at.split("|")[0]
        )
        for comment in comments.items:
            if comment.id > seen.baseline_comment_id:
                await self._dispatch_comment(repo, item, comment, out)
        if item.is_pull:
            await self._reviews(repo, item, seen, out)

    async def _reviews(self, repo: str, item: Item, seen: SeenItem, out: RepoResult) -> None:
        out.calls += 2
        reviews = await self.client.list_reviews(repo, item.number)
        for review in reviews.items:
            if review.submitted_at and _iso(review.submitted_at) >= seen.baseline_at:
                await self._dispatch_review(repo, item, review, out)
        notes = await self.client.list_repo_review_comments(
            repo, since=seen.updated_at.split("|")[0]
        )
        for note in notes.items:
            if note.number == item.number and _iso(note.created_at) >= seen.baseline_at:
                await self._dispatch_review_comment(repo, item, note, out)

    async def _dispatch_comment(
        self, repo: str, item: Item, comment: Comment, out: RepoResult
    ) -> None:
        payload = {
            "action": "created",
            "issue": _issue_json(item),
            "comment": {
                "id": comment.id,
                "body": comment.body,
                "html_url": comment.html_url,
                "user": _user(comment.user.login, comment.user.type),
                "author_association": comment.author_association,
            },
            "repository": _repository(repo),
            "sender": _user(comment.user.login, comment.user.type),
        }
        await self._send("issue_comment", f"poll-comment-{comment.id}", payload, out)

    async def _dispatch_review(
        self, repo: str, item: Item, review: Review, out: RepoResult
    ) -> None:
        payload = {
            "action": "submitted",
            "pull_request": self._pull_json(item),
            "review": {
                "id": review.id,
                "body": review.body,
                "state": review.state,
                "html_url": review.html_url,
                "user": _user(review.user.login, review.user.type),
            },
            "repository": _repository(repo),
            "sender": _user(review.user.login, review.user.type),
        }
        await self._send("pull_request_review", f"poll-review-{review.id}", payload, out)

    async def _dispatch_review_comment(
        self, repo: str, item: Item, note: ReviewComment, out: RepoResult
    ) -> None:
        payload = {
            "action": "created",
            "pull_request": self._pull_json(item),
            "comment": {
                "id": note.id,
                "body": note.body,
                "html_url": note.html_url,
                "path": note.path,
                "user": _user(note.user.login, note.user.type),
            },
            "repository": _repository(repo),
            "sender": _user(note.user.login, note.user.type),
        }
        await self._send(
            "pull_request_review_comment", f"poll-review-comment-{note.id}", payload, out
        )

    async def _send(
        self, event: str, delivery: str, payload: dict[str, Any], out: RepoResult
    ) -> None:
        body = json.dumps(payload).encode()
        result = await asyncio.to_thread(dispatch.dispatch, self.ctx, event, body, delivery, "poll")
        if not result.duplicate:
            out.dispatched += 1

    async def _reconcile(self, repo: str, listed: set[int], out: RepoResult) -> None:
        """Close the sessions whose items left the listing because they were closed."""
        for ref, number in await asyncio.to_thread(self._live_items, repo):
            if number in listed:
                continue
            out.calls += 1
            issue = await self.client.get_issue(repo, number)
            if issue.state != "closed":
                continue
            merged = False
            if issue.is_pull:
                out.calls += 1
                merged = (await self.client.get_pull(repo, number)).merged
            await self._closed(repo, issue, merged, out)
            ev.emit(
                self.ctx.db, "poll.closure_detected", source=SOURCE, work_item=ref, merged=merged
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
        closed_at = _iso(item.closed_at or item.updated_at)
        delivery = f"poll-close-{repo}-{item.number}-{closed_at}"
        sender = _user("the-loop-poller", "Bot")
        if item.is_pull:
            pull = {**self._pull_json(item), "state": "closed", "merged": merged}
            payload = {
                "action": "closed",
                "number": item.number,
                "pull_request": pull,
                "repository": _repository(repo),
                "sender": sender,
            }
            await self._send("pull_request", delivery, payload, out)
        else:
            issue = {**_issue_json(item), "state": "closed"}
            payload = {
                "action": "closed",
                "issue": issue,
                "repository": _repository(repo),
                "sender": sender,
            }
            await self._send("issues", delivery, payload, out)
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
    most ``MAX_BACKOFF_SECONDS``, never below the interval)."""
    return float(max(interval, min(interval * 2.0**failures, MAX_BACKOFF_SECONDS)))


async def poll_loop(ctx: Ctx, stop: asyncio.Event) -> None:
    """The daemon's poller: one cycle every ``github.poller.intervalSeconds`` (reloadable),
    backing off while cycles fail (GitHub down, timing out, rate limiting)."""
    poller: Poller | None = None
    failures = 0
    while not stop.is_set():
        cfg = ctx.config.github
        if cfg.enabled and cfg.poller.enabled:
            poller = poller or Poller(ctx)
            result = await poller.cycle()
            failures = 0 if result.ok else failures + 1
        wait = next_wait(ctx.config.github.poller.interval_seconds, failures)
        try:
            await asyncio.wait_for(stop.wait(), timeout=wait)
        except TimeoutError:
            continue
    if poller is not None:
        await poller.client.aclose()
