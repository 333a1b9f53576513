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
"""

from __future__ import annotations

import asyncio
import http
import json

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from the_loop.metrics import METRICS

MAX_REQUEST_LINE = 8 * 1024
MAX_HEADERS = 100
MAX_HEADER_BYTES = 16 * 1024
HEADER_SECONDS = 10.0
h11_limit = MAX_REQUEST_LINE + MAX_HEADER_BYTES
"""uvicorn's ``h11_max_incomplete_event_size``: request line and headers together."""


class _Refusal(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing oversized or slow request heads (see module)."""

    _header_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._header_bytes = 0
        self._cancel_head_timer()
        self._head_timer = self.loop.call_later(HEADER_SECONDS, self._head_too_slow)

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
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
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
        self._cancel_head_timer()
        METRICS.count_refused_request(status)
        body = json.dumps({"error": {"code": "bad_request", "message": message}}).encode()
        phrase = http.HTTPStatus(status).phrase
        head = (
            f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        ).encode()
        self.transport.write(head + body)
        self.transport.close()
