"""What every fake model API shares: a threaded HTTP server on 127.0.0.1 (a free port), started
and stopped with the fake (``start()``/``stop()`` or a ``with`` block), and the lock and
sequence its handlers record requests under."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self


@dataclass
class LoopbackServer:
    """Base of a fake served over loopback; a subclass names its request handler class, which
    reaches the fake as ``self.fake``."""

    _server: ThreadingHTTPServer | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _seq: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False, repr=False)

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def start(self) -> Self:
        handler = type("Handler", (self.handler_class(),), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:PORT`` of the running server."""
        assert self._server is not None, f"{type(self).__name__} is not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}"
