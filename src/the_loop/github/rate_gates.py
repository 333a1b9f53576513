"""Where the GitHub client keeps the rate limits in force (its gates), so that every client,
and every process, waits for a reset one of them was told about.

A gate is a ``RateLimited``: nothing is sent for its ``resource`` (``core``, ``graphql``, or
``*`` for a secondary limit, which stops everything) before its ``reset_at``. The client keeps
its own gates in memory and, given a ``RateGates`` store, saves every gate it closes there and
reads the store before each request: ``SqliteRateGates`` keeps them in the state database, so
a restarted daemon, ``the-loop poll --once`` and any other client of the same API honour a
limit another process hit (SPEC §12). The store is called from a worker thread.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Protocol

from the_loop.github.errors import RateLimited
from the_loop.store import Database, github_state
from the_loop.store.github_state import RateLimitRow


class RateGates(Protocol):
    """Gates shared beyond one client, by API root (``apiUrl``)."""

    def active(self, api_url: str, now: float) -> list[RateLimited]:
        """The gates of API_URL whose reset is after NOW."""
        ...

    def save(self, api_url: str, gates: Iterable[RateLimited]) -> None:
        """Keep GATES for API_URL (replacing any earlier gate of the same resource)."""
        ...


class SqliteRateGates:
    """``RateGates`` in the-loop's state database (table ``github_rate_limits``)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def active(self, api_url: str, now: float) -> list[RateLimited]:
        return [
            RateLimited(
                row.message, reset_at=row.reset_at, secondary=row.secondary, resource=row.resource
            )
            for row in github_state.rate_limits(self.db, api_url, now)
        ]

    def save(self, api_url: str, gates: Iterable[RateLimited]) -> None:
        for gate in gates:
            row = RateLimitRow(api_url, gate.resource, gate.reset_at, gate.secondary, str(gate))
            github_state.put_rate_limit(self.db, row)


class Gates:
    """One client's gates: its own, in memory, and those of a shared STORE (if any)."""

    def __init__(self, api_url: str, store: RateGates | None = None) -> None:
        self.api_url = api_url
        self.store = store
        self._own: dict[str, RateLimited] = {}

    async def check(self, resource: str, now: float) -> None:
        """Raise a ``RateLimited`` (nothing is to be sent) while RESOURCE, or everything, is
        limited at NOW by a gate of this client or of the store."""
        if self.store is not None:
            for shared in await asyncio.to_thread(self.store.active, self.api_url, now):
                known = self._own.get(shared.resource)
                if known is None or known.reset_at < shared.reset_at:
                    self._own[shared.resource] = shared
        for key in (resource, "*"):
            limited = self._own.get(key)
            if limited is not None and limited.reset_at > now:
                raise RateLimited(
                    f"{limited.message} (not sending until the reset, "
                    f"{limited.retry_after(now):.0f}s from now)",
                    reset_at=limited.reset_at,
                    secondary=limited.secondary,
                    resource=limited.resource,
                )

    def close(self, gates: Iterable[RateLimited]) -> None:
        """Close GATES in memory (the store is written by ``save``)."""
        for gate in gates:
            self._own[gate.resource] = gate

    async def save(self, gates: list[RateLimited]) -> None:
        """Close GATES, and keep them in the store for every other client and process."""
        self.close(gates)
        if gates and self.store is not None:
            await asyncio.to_thread(self.store.save, self.api_url, gates)
