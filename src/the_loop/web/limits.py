"""HTTP limits the server enforces before a request reaches the app.

An unauthenticated client must cost almost nothing (SPEC §11): the request line is at most
``MAX_REQUEST_LINE`` bytes (else ``414``), a request carries at most ``MAX_HEADERS`` headers of
at most ``MAX_HEADER_BYTES`` together (else ``431``), and its headers must arrive within
``HEADER_SECONDS`` of its first byte (else ``408``). A refused request is answered with a short
fixed response, the connection is closed, the refusal is counted in metrics and nothing is
logged or stored. The body's read time is bounded by the route that reads it
(``web.webhooks``).

``LimitedHttpToolsProtocol`` is uvicorn's httptools protocol with these checks; ``h11_limit``
is the equivalent bound for uvicorn's pure-Python h11 protocol (used when httptools is not
installed), which answers ``400`` instead of ``431``/``414``.

Connections are bounded too (``server.limits``, built by ``protocol_for``): a connection that
sends nothing within ``idleSeconds`` of opening is closed (uvicorn closes one idle that long
between requests), and at most ``maxConnections`` are open at once, never more than the
open-file limit minus ``FD_RESERVE`` (file descriptors stay for the database, tmux and
terminals, so ``accept`` never fails for want of one). At the cap a new connection closes the
oldest connection that has no request in the app (idle, or still sending its head), so health
and intake keep answering under a flood of idle sockets; with none to close it is answered
``503`` and closed. What was shed is counted in metrics and said in one log line a minute at
most (``ShedLog``).

The daemon serves on uvloop (decision 0073), which accepts every connection the kernel has
queued in one turn of the loop, before the cap sees any of them: the listen queue
(``LISTEN_BACKLOG``) is therefore kept well under ``FD_RESERVE``. Should an ``accept`` still
find no file descriptor, libuv closes the connections waiting in the queue and keeps serving.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import resource
import time
from collections import Counter
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from the_loop.config.limits import LimitsConfig
from the_loop.views.metrics import METRICS

MAX_REQUEST_LINE = 8 * 1024
MAX_HEADERS = 100
MAX_HEADER_BYTES = 16 * 1024
HEADER_SECONDS = 10.0
"""The default of ``server.limits.headerSeconds``."""
FD_RESERVE = 256
"""File descriptors the connection cap leaves for everything else: the database, tmux and
terminals, and the connections accepted before the cap sees them (at most the listen queue,
``LISTEN_BACKLOG``, in one turn of the event loop, and those shed but not yet closed)."""
LISTEN_BACKLOG = 128
"""The kernel's queue of connections not yet accepted (the listening socket's ``backlog``):
the most one turn of the event loop accepts before the cap sees them, so half of
``FD_RESERVE``. A connection beyond it waits for the client's SYN retry, as with any server
whose queue is full."""
SHED_LOG_SECONDS = 60.0
_log = logging.getLogger("the_loop.limits")
h11_limit = MAX_REQUEST_LINE + MAX_HEADER_BYTES
"""uvicorn's ``h11_max_incomplete_event_size``: request line and headers together."""


class _Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class ShedLog:
    """Counts what a bound shed and says it in at most one log line per ``SHED_LOG_SECONDS``
    (the first at once, the rest summed until the minute is up). Call from the event loop."""

    def __init__(self, interval: float = SHED_LOG_SECONDS) -> None:
        self.interval = interval
        self.counts: Counter[str] = Counter()
        self._last = -interval
        self._timer: asyncio.TimerHandle | None = None

    def note(self, what: str) -> None:
        METRICS.count_shed(what)
        self.counts[what] += 1
        if self._timer is None:
            loop = asyncio.get_running_loop()
            delay = max(0.0, self._last + self.interval - time.monotonic())
            self._timer = loop.call_later(delay, self.flush)

    def flush(self) -> None:
        self._timer = None
        self._last = time.monotonic()
        if self.counts:
            said = ", ".join(f"{n} {what}" for what, n in sorted(self.counts.items()))
            _log.warning("shed by the server's limits since the last report: %s", said)
            self.counts.clear()


SHED = ShedLog()
"""The daemon's one shed report (connections here; logins, terminals and streams elsewhere)."""


def connection_cap(configured: int) -> int:
    """CONFIGURED, lowered to the open-file limit minus ``FD_RESERVE`` (at least 16)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return configured
    return max(16, min(configured, soft - FD_RESERVE))


class Connections:
    """The open HTTP connections of one server, oldest first, and its cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.open: dict[LimitedHttpToolsProtocol, None] = {}

    def oldest_idle(self) -> LimitedHttpToolsProtocol | None:
        for conn in self.open:
            if conn.idle:
                return conn
        return None


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing oversized or slow request heads and bounding
    connections (see module). ``protocol_for`` makes one with the configured limits."""

    header_seconds = HEADER_SECONDS
    idle_seconds = 5.0
    table = Connections(1000)
    """This server's open connections (``protocol_for`` gives each server its own)."""
    _header_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None
    _idle_timer: asyncio.TimerHandle | None = None

    @property
    def idle(self) -> bool:
        """No request of this connection is in the app (none yet, or its response is sent)."""
        return not self.transport.is_closing() and (
            self.cycle is None or self.cycle.response_complete
        )

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        bound = type(self).table
        if len(bound.open) >= bound.cap:
            oldest = bound.oldest_idle()
            if oldest is None:
                SHED.note("connections refused with 503 (all busy)")
                self._refuse(503, "the server is at its connection limit; try again")
                return
            SHED.note("idle connections closed at the connection cap")
            oldest.close_quietly()
        bound.open[self] = None
        self._idle_timer = self.loop.call_later(self.idle_seconds, self._silent_too_long)

    def close_quietly(self) -> None:
        """Close without a word (an idle connection shed to make room)."""
        self._forget()
        self.transport.close()

    def _silent_too_long(self) -> None:
        self._idle_timer = None
        if not self.transport.is_closing():
            SHED.note("silent connections closed")
            self.close_quietly()

    def _forget(self) -> None:
        type(self).table.open.pop(self, None)
        self._cancel_head_timer()
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def handle_websocket_upgrade(self) -> None:
        self._forget()  # the WebSocket protocol owns the connection now (terminals are capped)
        super().handle_websocket_upgrade()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(self.header_seconds, self._head_too_slow)

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > MAX_REQUEST_LINE:
            raise _Refusal(414, "request line too long")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_bytes += len(name) + len(value) + 4
        if self._header_bytes > MAX_HEADER_BYTES:
            raise _Refusal(431, "request headers too large")
        if len(self.headers) >= MAX_HEADERS:
            raise _Refusal(431, "too many request headers")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._cancel_head_timer()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
        except httptools.HttpParserError as exc:
            cause = exc.__context__
            if isinstance(cause, _Refusal):
                self._refuse(cause.status, cause.message)
            else:
                self._refuse(400, "invalid HTTP request")

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self._refuse(408, "request headers not received in time")

    def _refuse(self, status: int, message: str) -> None:
        """Answer STATUS with a fixed short body, close, count it; log nothing."""
        self._forget()
        METRICS.count_refused_request(status)
        body = json.dumps({"error": {"code": "bad_request", "message": message}}).encode()
        phrase = http.HTTPStatus(status).phrase
        head = (
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        self.transport.write(head + body)
        self.transport.close()


def protocol_for(limits: LimitsConfig) -> type[LimitedHttpToolsProtocol]:
    """The protocol class for one server with LIMITS (its own table of connections)."""
    attributes: dict[str, Any] = {
        "header_seconds": limits.header_seconds,
        "idle_seconds": limits.idle_seconds,
        "table": Connections(connection_cap(limits.max_connections)),
    }
    return type("BoundedHttpToolsProtocol", (LimitedHttpToolsProtocol,), attributes)
