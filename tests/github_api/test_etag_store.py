"""The SQLite ETag store: persistent conditional requests across clients and processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.fakes.fake_github import FakeGitHub
from tests.github_api.conftest import REPO
from the_loop.github.api import CachedResponse, GitHubClient
from the_loop.github.etag_store import SqliteEtagStore
from the_loop.store import open_database

MakeClient = Callable[..., GitHubClient]


def test_put_get_replace_delete_prune(tmp_path: Path) -> None:
    store = SqliteEtagStore(open_database(tmp_path))
    assert store.get("k") is None
    store.put("k", CachedResponse('"a"', b'[{"x": 1}]', '<u>; rel="next"', 100.0))
    store.put("k", CachedResponse('"b"', b"[]", None, 200.0))
    store.put("old", CachedResponse('"c"', b"{}", None, 10.0))
    assert store.get("k") == CachedResponse('"b"', b"[]", None, 200.0)
    assert store.prune(max_age=100, now=150) == 1 and store.get("old") is None
    store.delete("k")
    assert len(store) == 0


async def test_a_new_client_on_the_same_database_revalidates(
    gh: FakeGitHub, make_client: MakeClient, tmp_path: Path
) -> None:
    for i in range(120):
        gh.add_issue(REPO, f"issue {i}", labels=["the-loop"])
    async with make_client(etags=SqliteEtagStore(open_database(tmp_path))) as client:
        first = await client.list_open_items(REPO, "the-loop")
    gh.reset_log()
    async with make_client(etags=SqliteEtagStore(open_database(tmp_path))) as restarted:
        again = await restarted.list_open_items(REPO, "the-loop")
    assert again.not_modified and again.items == first.items
    assert [r.status for r in gh.requests()] == [304, 304] and gh.cost() == 0
