"""Node-to-node requests (decision 0035): this node asking the node that runs a session for
what only that node can see — today the screen of its agent (read-only, one request).

Both nodes need the cluster token (``node.clusterTokenEnv``, the same secret everywhere); a
node publishes in its heartbeat row that it takes such requests, and the URL to reach it
(``node.url``). Without the token here, or when the owning node does not take them, the caller
keeps answering with the command to run on the owning node (decision 0032). The token travels
only in the ``Authorization`` header of the request; it is never logged, recorded or echoed.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from the_loop.cluster import nodes
from the_loop.context import Ctx
from the_loop.errors import Conflict, LoopError, NotFound, PeerFailed, PeerTimeout
from the_loop.store import nodes as store

TIMEOUT_SECONDS = 5.0
SCREEN_PATH = "/api/v1/cluster/sessions/{id}/screen"


def peer_screen(ctx: Ctx, node: str, session_id: str, lines: int) -> str | None:
    """The last LINES lines of session SESSION_ID's screen, read from NODE (which runs it);
    None when node-to-node requests cannot be made (no cluster token here, NODE does not take
    them, or has no URL). Raises ``PeerTimeout`` (504) when NODE does not answer in time,
    ``PeerFailed`` (502) when it cannot be reached or refuses this node's token, and relays
    its ``NotFound`` and ``Conflict`` answers."""
    token = nodes.cluster_token(ctx)
    peer = store.get(ctx.db.connect(), node)
    if token is None or peer is None or not peer.cluster or not peer.url:
        return None
    import httpx  # lazy: only a cross-node read needs the HTTP client

    url = peer.url + SCREEN_PATH.format(id=quote(session_id, safe=""))
    try:
        answer = httpx.get(
            url,
            params={"lines": lines},
            headers={"Authorization": f"Bearer {token}"},
            timeout=TIMEOUT_SECONDS,
            follow_redirects=False,
        )
    except httpx.TimeoutException:
        raise PeerTimeout(
            f"node {node} did not answer within {TIMEOUT_SECONDS:g} s at {peer.url}"
        ) from None
    except httpx.HTTPError as exc:
        raise PeerFailed(f"cannot reach node {node} at {peer.url}: {type(exc).__name__}") from None
    return _text(node, answer.status_code, _json(answer))


def _json(answer: Any) -> Any:
    try:
        return answer.json()
    except ValueError:
        return None


def _text(node: str, status: int, body: Any) -> str:
    """The screen text of NODE's answer (STATUS, BODY), or the error it stands for."""
    text = body.get("text") if isinstance(body, dict) else None
    if status == 200 and isinstance(text, str):
        return text
    if status == 401:
        raise PeerFailed(
            f"node {node} refused this node's cluster token: give every node the same secret "
            "in the variable node.clusterTokenEnv names"
        )
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    relayed: dict[int, type[LoopError]] = {404: NotFound, 409: Conflict}
    if isinstance(message, str) and status in relayed:
        raise relayed[status](f"node {node}: {message}")
    raise PeerFailed(f"node {node} answered HTTP {status} to a screen request")
