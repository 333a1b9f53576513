"""The daemon's HTTP server (``the_loop.daemon.server``, decision 0074): uvicorn's, ticking once
a second instead of ten times, and stopping at once when told to, not at its next tick."""

from __future__ import annotations

import threading
from typing import Any

import httpx
import pytest
import uvicorn

from tests.helpers import wait_until
from the_loop.daemon import server as server_module
from the_loop.daemon.serve import bind_socket
from the_loop.daemon.server import Server


async def hello(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"hello"})


def test_the_server_answers_and_stops_at_once_not_at_its_next_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a stop that waited for the tick would take a minute
    monkeypatch.setattr(server_module, "TICK_SECONDS", 60.0)
    sock = bind_socket("127.0.0.1", 0, 16)
    server = Server(uvicorn.Config(hello, lifespan="off", log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, timeout=10, what="the server to start")
        port = sock.getsockname()[1]
        answer = httpx.get(f"http://127.0.0.1:{port}/", timeout=10)
        assert answer.text == "hello" and answer.headers["date"].endswith("GMT")
        server.should_exit = True
        thread.join(timeout=20)
        assert not thread.is_alive(), "the server waited for its tick to stop"
    finally:
        server.should_exit = True
        thread.join(timeout=70)
        sock.close()
