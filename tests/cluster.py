"""The two-node cluster the node tests share: two real daemons ("nodes": two state dirs, tmux
sockets and ports) on one real PostgreSQL. The fixtures ``cluster`` and ``cluster_config`` are in
``tests/reliability/conftest.py``; a test module using them sets ``state_backend`` to
``postgresql``."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass

import httpx

from tests.daemon import SECRET, Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.work import Work
from the_loop.github.signature import sign
from the_loop.store import Database, open_database

DEAD_AFTER = 5.0
TOKEN = re.compile(r"tok-(\d+)-(\d+)-end")


@dataclass
class Node:
    name: str
    work: Work
    daemon: Daemon

    def post(self, item: int, seq: int, *, start: bool | None = None) -> int:
        """Send comment SEQ on issue ITEM to this node (a new connection, as GitHub does): a
        start command when START (by default for SEQ 0 only), else a note; the HTTP status,
        or 0 when the node did not answer."""
        start = seq == 0 if start is None else start
        text = f"the-loop start tok-{item}-{seq}-end" if start else f"note tok-{item}-{seq}-end"
        body = json.dumps(P.issue_comment_event(text, number=item)).encode()
        headers = {
            "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": f"d-{item}-{seq}",
            "X-Hub-Signature-256": sign(SECRET.encode(), body),
            "Content-Type": "application/json",
        }
        try:
            url = f"{self.daemon.url}/webhooks/github"
            return httpx.post(url, content=body, headers=headers, timeout=5).status_code
        except httpx.HTTPError:
            return 0

    def seen(self) -> Counter[str]:
        """Each token as often as this node's fake agents received it."""
        counts: Counter[str] = Counter()
        for path in self.work.agent_dir.glob("*.jsonl"):
            for record in fake_agent.read_prompts(self.work.agent_dir, path.stem):
                for m in TOKEN.finditer(record.text):
                    counts[f"{m.group(1)}-{m.group(2)}"] += 1
        return counts


def cluster_db(cluster: list[Node]) -> Database:
    """A handle of its own on the database CLUSTER shares."""
    url = cluster[0].work.env.database_url
    return open_database(cluster[0].work.env.root / "reader", url)
