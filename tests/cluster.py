"""The two-node cluster the node tests share: two real daemons ("nodes": two state dirs, tmux
sockets and ports) on one real PostgreSQL. The fixtures ``cluster`` and ``cluster_config`` are in
``tests/reliability/conftest.py``; a test module using them sets ``state_backend`` to
``postgresql``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

from tests.daemon import Daemon
from tests.fakes import fake_agent
from tests.tokens import seen_tokens, signed_comment, token_comment
from tests.work import Work
from the_loop.events import Event, EventFilter, query
from the_loop.store import Database, open_database

DEAD_AFTER = 5.0


@dataclass
class Node:
    name: str
    work: Work
    daemon: Daemon

    def post(self, item: int, seq: int, *, start: bool | None = None) -> int:
        """Send comment SEQ on issue ITEM to this node (a new connection, as GitHub does): a
        start command when START (by default for SEQ 0 only), else a note; the HTTP status,
        or 0 when the node did not answer."""
        return self._send(*token_comment(item, seq, start))

    def comment(self, item: int, text: str, delivery: str) -> int:
        """Send comment TEXT (a keyword, say) on issue ITEM to this node in delivery DELIVERY;
        the HTTP status, or 0 when the node did not answer."""
        return self._send(*signed_comment(item, text, delivery))

    def _send(self, body: bytes, headers: dict[str, str]) -> int:
        try:
            url = f"{self.daemon.url}/webhooks/github"
            return httpx.post(url, content=body, headers=headers, timeout=5).status_code
        except httpx.HTTPError:
            return 0

    def seen(self) -> Counter[str]:
        """Each token as often as this node's fake agents received it."""
        return seen_tokens(self.work)

    def prompts(self) -> list[str]:
        """Every prompt this node's fake agents received, conversation by conversation."""
        return [
            r.text
            for path in self.work.agent_dir.glob("*.jsonl")
            for r in fake_agent.read_prompts(self.work.agent_dir, path.stem)
        ]


def events(db: Database, *types: str) -> list[Event]:
    """The events of TYPES in DB, oldest first."""
    return query(db, EventFilter(types=types, limit=None))


def declared_dead(db: Database, name: str) -> list[Event]:
    """The ``node.dead`` events that declared node NAME dead, oldest first."""
    return [e for e in events(db, "node.dead") if e.payload.get("node") == name]


@contextmanager
def away(node: Node) -> Iterator[None]:
    """NODE's daemon stopped for the block, then started again.

    Any node's worker may take a delivery, whichever node received it (SPEC §17: new sessions
    start on a node with capacity), so a test that needs an item's session on one node posts
    to it with the other node away, and waits in the block until that node holds the item. A
    node away for longer than ``DEAD_AFTER`` may be declared dead meanwhile (harmless: it has
    no session), so a test waiting for a declaration names its node (``declared_dead``)."""
    node.daemon.stop()
    try:
        yield
    finally:
        node.daemon.start()


def cluster_db(cluster: list[Node]) -> Database:
    """A handle of its own on the database CLUSTER shares."""
    url = cluster[0].work.env.database_url
    return open_database(cluster[0].work.env.root / "reader", url)
