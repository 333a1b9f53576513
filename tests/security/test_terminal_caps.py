"""Browser terminals are bounded: at most ``server.limits.terminalsPerSession`` on one session
and ``server.limits.terminals`` overall. At a cap the oldest read-only viewer is closed for a
newcomer; when every viewer can type, the newcomer is refused (503) — and each closed or
refused terminal leaves no tmux client behind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from tests.api.test_terminal import READ_ONLY, bearer, client_pids, hello, spawned, ws_url
from tests.daemon import Daemon
from tests.helpers import await_until, wait_until
from tests.work import Work

TARGET = "loop-github-octo-repo-15"


@pytest.fixture
def capped(work: Work) -> Iterator[Daemon]:
    work.configure(
        github={"enabled": True},
        server={"limits": {"terminals": 3, "terminalsPerSession": 2}},
    )
    d = Daemon(work)
    d.start(THE_LOOP_READONLY_TOKEN=READ_ONLY)
    yield d
    d.stop()


async def _closed(ws: object) -> bool:
    try:
        await asyncio.wait_for(ws.recv(), timeout=0.2)  # type: ignore[attr-defined]
    except ConnectionClosed:
        return True
    except TimeoutError:
        return False
    return False


async def test_the_oldest_read_only_viewer_gives_way_then_newcomers_are_refused(
    capped: Daemon,
) -> None:
    sid = spawned(capped)
    url = ws_url(capped, f"/sessions/{sid}/terminal")
    async with connect(url, additional_headers=bearer(READ_ONLY)) as watcher:
        await hello(watcher)
        async with connect(url, additional_headers=bearer(capped.token)) as first:
            await hello(first)
            wait_until(lambda: len(client_pids(capped.work, TARGET)) == 2, 10, what="2 clients")
            async with connect(url, additional_headers=bearer(capped.token)) as second:
                await hello(second)  # the session's cap (2): the read-only watcher gave way
                await await_until(lambda: _closed(watcher), 10, interval=0, what="eviction")
                async with connect(url, additional_headers=bearer(capped.token)) as third:
                    refused = json.loads(await asyncio.wait_for(third.recv(), timeout=10))
                    assert refused["type"] == "error" and "too many" in refused["message"]
                    await await_until(lambda: _closed(third), 10, interval=0, what="refusal")
                assert not await _closed(first) and not await _closed(second)
                wait_until(lambda: len(client_pids(capped.work, TARGET)) == 2, 10, what="2 left")
    wait_until(lambda: client_pids(capped.work, TARGET) == [], 10, what="no client left")
