"""The daemon's HTTP server: uvicorn's, with a tick of once a second.

uvicorn's server wakes ten times a second to look whether it should exit (and, once a second,
to renew the ``Date`` header). With 200 idle agents that beat was the largest fixed cost of an
idle daemon (``bench/analysis.md`` item 22). Here the tick runs once a second, and whatever
asks the server to exit (its signal handlers, ``serve``'s own, a test) wakes it at once, so a
stop is as quick as before (decision 0074). Imported only by ``serve``: commands that talk to
the daemon do not load uvicorn.
"""

from __future__ import annotations

import asyncio
import contextlib

import uvicorn

from the_loop.pulse import first

TICK_SECONDS = 1.0
"""How often the server looks at its own state with nothing asking it to exit."""
TICKS_PER_SECOND = 10
"""uvicorn's ``on_tick`` renews the ``Date`` header on every tenth count."""


class Server(uvicorn.Server):
    """uvicorn's server ticking every ``TICK_SECONDS``, woken at once when told to exit."""

    _exit = False
    _woken: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None

    @property
    def should_exit(self) -> bool:
        return self._exit

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self._exit = value
        if value and self._woken is not None:
            loop, woken = self._woken
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(woken.set)

    async def main_loop(self) -> None:
        woken = asyncio.Event()
        self._woken = (asyncio.get_running_loop(), woken)
        counter = 0
        try:
            while not await self.on_tick(counter):
                counter = (counter + TICKS_PER_SECOND) % 864000
                await first(TICK_SECONDS, woken)
        finally:
            self._woken = None
