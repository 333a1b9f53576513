"""Node-to-node requests on two real daemons sharing one PostgreSQL (decision 0035): with the
cluster token on both, node A's screen API and session page read the screen of node B's
session from B; the cluster endpoint takes only the cluster token (none, a wrong one or an
API token: 401, and nothing is read); without the token on both, the screen API answers 409
with the command, and the page shows it."""

from __future__ import annotations

import secrets
import signal
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.api.test_dashboard_pages import logged_in
from tests.cluster import Node, cluster_db
from tests.helpers import wait_until
from the_loop import events as ev
from the_loop.store import inbox
from the_loop.store import sessions as session_store
from the_loop.store.sessions import SessionRecord, SessionStatus

pytestmark = [pytest.mark.reliability, pytest.mark.timeout(300)]

TOKEN_ENV = "LOOP_TEST_CLUSTER_TOKEN"
TOKEN = secrets.token_urlsafe(32)
OTHER = secrets.token_urlsafe(32)
BOTH = {"node-a": {TOKEN_ENV: TOKEN}, "node-b": {TOKEN_ENV: TOKEN}}


@pytest.fixture
def state_backend() -> str:
    return "postgresql"


@pytest.fixture
def cluster_config() -> dict[str, dict[str, Any]]:
    node = {"node": {"clusterTokenEnv": TOKEN_ENV}}
    return {"node-a": node, "node-b": node}


@pytest.fixture
def cluster_env(request: pytest.FixtureRequest) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = getattr(request, "param", BOTH)
    return found


def _theirs(cluster: list[Node]) -> SessionRecord:
    """A started session on node-b, whose agent has written its banner: node-a (one slot)
    is sent three new items and hands what it has no slot for to node-b."""
    a, b = cluster
    for item in range(1, 4):
        assert a.post(item, 0) == 202
    db = cluster_db(cluster)

    def started() -> SessionRecord | None:
        for rec in session_store.list_sessions(db.connect()):
            if rec.node == "node-b" and rec.status is SessionStatus.active and rec.started_at:
                return rec
        return None

    rec: SessionRecord = wait_until(started, timeout=120, what="a session on node-b")  # type: ignore[assignment]

    def banner() -> bool:
        answer = b.daemon.api("GET", f"/sessions/{rec.id}/screen")
        return answer.status_code == 200 and "FAKE-AGENT" in answer.json()["text"]

    wait_until(banner, timeout=60, what="the agent's banner on node-b")

    def drained() -> bool:
        done = ("succeeded", "dead")
        return all(i.status in done for i in inbox.list_items(db, limit=1000))

    wait_until(drained, timeout=120, interval=0.2, what="the inbox to drain")
    return rec


def _cluster_get(node: Node, path: str, token: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    return httpx.get(f"{node.daemon.url}/api/v1/cluster{path}", headers=headers, timeout=30)


def _page(node: Node, session_id: str) -> str:
    """Session SESSION_ID's dashboard page as NODE serves it to a logged-in operator."""
    client, _ = logged_in(node.daemon, node.daemon.token)
    try:
        page = client.get(f"/sessions/{session_id}")
    finally:
        client.close()
    assert page.status_code == 200, page.text
    return page.text


def _last_id(db: Any) -> int:
    found = ev.query(db, ev.EventFilter(limit=None))
    return max((e.id for e in found), default=0)


def _about(db: Any, after: int, rec: SessionRecord) -> list[Any]:
    """Events after AFTER about REC or its item, or from the API (the other nodes' items go
    on being processed meanwhile)."""
    found = ev.query(db, ev.EventFilter(after_id=after, limit=None))
    return [
        e
        for e in found
        if e.session_id == rec.id or e.work_item == rec.work_item or e.source in ("api", "web")
    ]


@pytest.mark.parametrize("cluster", [(1, 20)], indirect=True)
def test_the_screen_of_another_nodes_session_is_read_from_that_node(
    cluster: list[Node],
) -> None:
    a, b = cluster
    theirs = _theirs(cluster)
    db = cluster_db(cluster)
    rows = a.daemon.api("GET", "/health").json()["detail"]["nodes"]["nodes"]
    assert rows["node-b"]["cluster"] and rows["node-b"]["url"] == b.daemon.url

    screen = a.daemon.api("GET", f"/sessions/{theirs.id}/screen", params={"lines": 50})
    assert screen.status_code == 200, screen.text
    body = screen.json()
    assert (body["sessionId"], body["lines"]) == (theirs.id, 50)
    assert "FAKE-AGENT" in body["text"]
    by_ref = a.daemon.api("GET", f"/sessions/{quote(theirs.work_item, safe='')}/screen")
    assert by_ref.status_code == 200 and "FAKE-AGENT" in by_ref.json()["text"]
    # the CLI with the token in its environment takes the same path
    env = {**a.work.env.process_env(), TOKEN_ENV: TOKEN}
    logs = a.work.env.run("sessions", "logs", theirs.work_item, "-n", "20", env=env)
    assert logs.exit_code == 0 and "FAKE-AGENT" in logs.stdout, logs.stderr
    assert TOKEN not in logs.stdout + logs.stderr + a.daemon.log() + b.daemon.log()

    # its page on node-a says where it runs and shows the screen node-b relayed
    page = _page(a, theirs.id)
    assert "runs on node <strong>node-b</strong>" in page and "FAKE-AGENT" in page, page
    assert "/messages" not in page and 'id="terminal"' not in page  # nothing here to type into

    # the cluster endpoint takes the cluster token only, checked before anything is read
    before = _last_id(db)
    path = f"/sessions/{theirs.id}/screen"
    for token in (None, OTHER, TOKEN[:-1], TOKEN + "x", b.daemon.token):
        answer = _cluster_get(b, path, token)
        assert answer.status_code == 401, (token is None, answer.text)
        assert answer.json()["error"]["code"] == "unauthorized"
        assert "FAKE-AGENT" not in answer.text
    missing = _cluster_get(b, "/sessions/no-such-session/screen", OTHER)
    assert missing.status_code == 401  # not 404: the session was never looked up
    assert _cluster_get(b, "/sessions/no-such-session/screen", TOKEN).status_code == 404
    assert _about(db, before, theirs) == []  # nothing happened
    wrong = b.daemon.api("GET", "/sessions", token=TOKEN)  # not an API token
    assert wrong.status_code == 401
    direct = _cluster_get(b, path, TOKEN)
    assert direct.status_code == 200 and "FAKE-AGENT" in direct.json()["text"]
    # a session that is not the asked node's is not relayed on
    relayed = _cluster_get(a, path, TOKEN)
    assert relayed.status_code == 409 and "runs on node node-b" in relayed.text

    # the owner does not answer: 504 within the timeout, a JSON error naming the node
    assert b.daemon.proc is not None
    b.daemon.proc.send_signal(signal.SIGSTOP)
    stuck = a.daemon.api("GET", f"/sessions/{theirs.id}/screen")
    assert stuck.status_code == 504, stuck.text
    assert stuck.json()["error"]["code"] == "node_timeout"
    assert "node node-b did not answer" in stuck.json()["error"]["message"]
    assert TOKEN not in stuck.text


@pytest.mark.parametrize("cluster", [(1, 20)], indirect=True)
@pytest.mark.parametrize(
    ("cluster_env", "status"),
    [
        ({"node-a": {TOKEN_ENV: TOKEN}}, 409),
        ({"node-a": {TOKEN_ENV: TOKEN}, "node-b": {TOKEN_ENV: OTHER}}, 502),
    ],
    indirect=["cluster_env"],
    ids=["owner-without-token", "owner-with-another-token"],
)
def test_without_the_same_cluster_token_the_screen_names_the_command_or_the_refusal(
    cluster: list[Node], status: int
) -> None:
    a, _ = cluster
    theirs = _theirs(cluster)
    screen = a.daemon.api("GET", f"/sessions/{theirs.id}/screen")
    assert screen.status_code == status, screen.text
    seen = a.daemon.api("GET", f"/sessions/{theirs.id}").json()
    assert (seen["pane"], seen["node"]) == ("elsewhere", "node-b")  # not node-a's "absent"
    page = _page(a, theirs.id)  # the page still opens, with the command instead of the screen
    assert "the-loop sessions attach" in page and "FAKE-AGENT" not in page
    message = screen.json()["error"]["message"]
    if status == 409:  # node-b takes no node-to-node requests: the command, as before
        assert "runs on node node-b" in message and "ssh -t node-b" in message
    else:
        assert "refused this node's cluster token" in message
    assert TOKEN not in screen.text and OTHER not in screen.text
