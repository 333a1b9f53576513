"""The outbox drained against the fake GitHub: exactly once through 5xx, lost answers and
crashes; permanent refusals recorded once; rate limits waited out (SPEC §12)."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator

import pytest

from tests.conftest import BACKENDS
from tests.fakes.fake_github import FakeGitHub
from tests.helpers import await_until, wait_until
from tests.outbox.conftest import REPO, asked
from the_loop import events as ev
from the_loop.context import Ctx
from the_loop.github.api import GitHubClient
from the_loop.github.markers import has_self_marker
from the_loop.outbox import drain as outbox
from the_loop.outbox import github as writebacks
from the_loop.store import outbox as store
from the_loop.store.outbox import CommentPayload, OutboxStatus

LATER = 3600.0  # a 'now' past every backoff: the next try without waiting for it


@pytest.fixture
async def client(ctx: Ctx) -> AsyncIterator[GitHubClient]:
    async with outbox.github_client(ctx.config.github) as c:
        yield c


async def drain_all(ctx: Ctx, client: GitHubClient, rounds: int = 10) -> outbox.DrainReport:
    """Drain as if time passed between passes, until nothing is claimed."""
    total = outbox.DrainReport()
    for _ in range(rounds):
        report = await outbox.drain_once(ctx, client, now=time.time() + LATER)
        total.add(report)
        if not report.claimed:
            break
    return total


def events(ctx: Ctx, type_: str) -> list[ev.Event]:
    return ev.query(ctx.db, ev.EventFilter(types=(type_,), limit=None))


def texts(gh: FakeGitHub, number: int, needle: str) -> list[str]:
    return [c["body"] for c in gh.comments(REPO, number) if needle in c["body"]]


async def test_502_twice_is_posted_exactly_once(
    ctx: Ctx, gh: FakeGitHub, client: GitHubClient
) -> None:
    item = asked(gh)
    writebacks.pickup(ctx, item.ref, item.event)
    writebacks.spawned(ctx, item.ref, item.event, True, "Started an agent.")
    gh.fail_next(2, status=502, path="*/reactions")
    gh.fail_next(2, status=502, path=f"/repos/{REPO}/issues/{item.number}/comments")
    first = await outbox.drain_once(ctx, client, now=time.time())
    assert first.claimed == 3 and first.waiting >= 2
    await drain_all(ctx, client)
    assert gh.count(method="POST", path="*/comments", status=201) == 1
    assert len(texts(gh, item.number, "Started an agent.")) == 1
    posted = texts(gh, item.number, "Started an agent.")[0]
    assert has_self_marker(posted) and "<!-- the-loop -->" in posted
    contents = [r["content"] for r in gh.reactions(REPO, comment_id=item.comment_id)]
    assert sorted(contents) == ["eyes", "hooray"]
    assert [i.status for i in store.list_items(ctx.db)] == [OutboxStatus.done] * 3
    assert len(events(ctx, "writeback.posted")) == 3 and not events(ctx, "writeback.failed")
    assert (await drain_all(ctx, client)).claimed == 0


async def test_a_comment_whose_answer_was_lost_is_not_posted_again(
    ctx: Ctx, gh: FakeGitHub, client: GitHubClient
) -> None:
    item = asked(gh)
    # GitHub takes the comment but answers after the client's timeout (0.5 s).
    gh.hang_next(1, seconds=1.5, path=f"/repos/{REPO}/issues/{item.number}/comments")
    writebacks.reply(ctx, item.ref, "One moment.")
    assert (await outbox.drain_once(ctx, client)).waiting == 1
    (row,) = store.list_items(ctx.db)
    assert (
        row.status is OutboxStatus.pending
        and row.verify
        and "did not answer" in (row.last_error or "")
    )
    wait_until(lambda: texts(gh, item.number, "One moment."), timeout=10, what="the slow post")
    await drain_all(ctx, client)
    assert len(texts(gh, item.number, "One moment.")) == 1
    assert gh.count(method="POST", path="*/comments") == 1
    done = store.get(ctx.db, row.id)
    assert done is not None and done.status is OutboxStatus.done
    assert "found already posted" in (done.result or "")


async def test_a_permanent_refusal_is_recorded_once_and_never_retried(
    ctx: Ctx, gh: FakeGitHub, client: GitHubClient
) -> None:
    item = asked(gh)
    writebacks.pickup(ctx, item.ref, item.event)
    gh.fail_next(1, status=422, path="*/reactions")
    report = await drain_all(ctx, client)
    assert report.failed == 1 and report.posted == 0
    for _ in range(3):
        assert (await drain_all(ctx, client)).claimed == 0
    assert gh.count(method="POST", path="*/reactions") == 1
    (row,) = store.list_items(ctx.db)
    assert row.status is OutboxStatus.failed and "422" in (row.last_error or "")
    failed = events(ctx, "writeback.failed")
    assert len(failed) == 1 and failed[0].payload["outboxId"] == row.id
    assert gh.reactions(REPO, comment_id=item.comment_id) == []


@pytest.mark.parametrize("limit", ["primary", "secondary"])
async def test_a_rate_limit_is_waited_out_until_its_reset(
    ctx: Ctx, gh: FakeGitHub, limit: str
) -> None:
    item = asked(gh)
    if limit == "primary":
        gh.exhaust_rate_limit(reset_in=2)
    else:
        gh.secondary_limit_next(1, retry_after=2, path="*/reactions")
    reset = gh.now() + 2
    stop = asyncio.Event()
    task = asyncio.create_task(outbox.outbox_loop(ctx, stop))
    writebacks.pickup(ctx, item.ref, item.event)

    async def posted() -> bool:
        rows = store.list_items(ctx.db)
        return bool(rows) and rows[0].status is OutboxStatus.done

    try:
        await await_until(posted, timeout=20, what="the reaction after the reset")
    finally:
        stop.set()
        await task
    tries = gh.requests(method="POST", path="*/reactions")
    assert [r.status for r in tries] == [403, 201], "retried before the reset"
    (row,) = store.list_items(ctx.db)
    assert row.attempts == 2 and row.updated_at.timestamp() >= reset
    assert [r["content"] for r in gh.reactions(REPO, comment_id=item.comment_id)] == ["eyes"]


def test_the_same_write_back_enqueued_twice_is_stored_once(ctx: Ctx, gh: FakeGitHub) -> None:
    item = asked(gh)
    with ctx.db.transaction() as tx:
        first = writebacks.queue_spawned(tx, ctx.config, item.ref, item.event, True, "hi")
        again = writebacks.queue_spawned(tx, ctx.config, item.ref, item.event, True, "hi")
        reply = writebacks.queue_reply(tx, ctx.config, item.ref, "no", delivery_id="d-1")
    assert len(first) == 2 and first == again
    with ctx.db.transaction() as tx:  # a re-processed delivery, in a later transaction
        assert writebacks.queue_spawned(tx, ctx.config, item.ref, item.event, True, "hi") == first
        assert writebacks.queue_reply(tx, ctx.config, item.ref, "no", delivery_id="d-1") == reply
        assert writebacks.queue_pickup(
            tx, ctx.config, item.ref, item.event
        ) == writebacks.queue_pickup(tx, ctx.config, item.ref, item.event)
    assert len(store.list_items(ctx.db)) == 4


async def test_a_posted_write_back_enqueued_again_is_not_posted_again(
    ctx: Ctx, gh: FakeGitHub, client: GitHubClient
) -> None:
    item = asked(gh)
    ids = writebacks.spawned(ctx, item.ref, item.event, True, "Started.")
    await drain_all(ctx, client)
    assert writebacks.spawned(ctx, item.ref, item.event, True, "Started.") == ids
    assert (await drain_all(ctx, client)).claimed == 0
    assert len(texts(gh, item.number, "Started.")) == 1


def test_the_row_belongs_to_the_callers_transaction(ctx: Ctx, gh: FakeGitHub) -> None:
    item = asked(gh)
    with pytest.raises(RuntimeError), ctx.db.transaction() as tx:
        assert writebacks.queue_pickup(tx, ctx.config, item.ref, item.event)
        assert len(store.list_items(ctx.db)) == 1  # visible inside the transaction
        raise RuntimeError("the decision failed")
    assert store.list_items(ctx.db) == []
    with ctx.db.transaction() as tx:
        writebacks.queue_pickup(tx, ctx.config, item.ref, item.event)
        # another connection does not see the row before the commit
        other = sqlite3.connect(ctx.db.path)
        assert other.execute("SELECT COUNT(*) FROM outbox").fetchone()[0] == 0
        other.close()
    assert len(store.list_items(ctx.db)) == 1


def test_switches_and_a_disabled_github_queue_nothing(ctx: Ctx, gh: FakeGitHub) -> None:
    item = asked(gh)
    off = ctx.config.model_copy(
        update={
            "github": ctx.config.github.model_copy(update={"reactions": False, "announce": False})
        }
    )
    disabled = ctx.config.model_copy(
        update={"github": ctx.config.github.model_copy(update={"enabled": False})}
    )
    with ctx.db.transaction() as tx:
        assert writebacks.queue_pickup(tx, off, item.ref, item.event) == []
        assert writebacks.queue_spawned(tx, off, item.ref, item.event, True, "x") == []
        assert writebacks.queue_reply(tx, disabled, item.ref, "x") == []
        assert writebacks.queue_pickup(tx, ctx.config, item.ref, None) == []
    assert store.list_items(ctx.db) == []


@pytest.mark.parametrize("state_backend", BACKENDS)  # recovered on either store
@pytest.mark.parametrize("landed", [True, False])
async def test_a_comment_left_sending_by_a_dead_process_is_posted_once(
    ctx: Ctx, gh: FakeGitHub, landed: bool
) -> None:
    item = asked(gh)
    writebacks.reply(ctx, item.ref, "Working on it.")
    # claimed by a process of this host that no longer exists, with a lease far from over
    dead = f"{outbox.owner_id().rpartition(':')[0]}:999999999"
    (claimed,) = store.claim_due(ctx.db, dead, 3600)
    assert claimed.status is OutboxStatus.sending
    assert isinstance(claimed.payload, CommentPayload)
    if landed:  # the POST reached GitHub; the process died before recording it
        gh.add_comment(REPO, item.number, claimed.payload.body, author=gh.login)
    stop = asyncio.Event()
    task = asyncio.create_task(outbox.outbox_loop(ctx, stop))

    async def done() -> bool:
        row = store.get(ctx.db, claimed.id)
        return row is not None and row.status is OutboxStatus.done

    try:
        await await_until(done, timeout=15, what="the recovered comment")
    finally:
        stop.set()
        await task
    assert len(texts(gh, item.number, "Working on it.")) == 1
    assert gh.count(method="POST", path="*/comments") == (0 if landed else 1)
