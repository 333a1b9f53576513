"""Bounded pools of long-lived things a client holds open (event streams, browser terminals).

A ``Slots`` pool has room for ``limit`` holders. When it is full, a newcomer takes the place of
the oldest *read-only* holder, whose ``ended`` event is set (it closes itself); when every
holder has the full role, the newcomer is refused (``take`` returns None). Every eviction and
refusal is counted (``web.limits.SHED``). Call on the event loop.
"""

from __future__ import annotations

import asyncio
import itertools
from collections import OrderedDict
from dataclasses import dataclass, field

from the_loop.web.limits import SHED


@dataclass(eq=False)
class Holder:
    read_only: bool
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class Slots:
    """At most LIMIT holders of WHAT (see module)."""

    def __init__(self, limit: int, what: str) -> None:
        self.limit = limit
        self.what = what
        self._held: OrderedDict[int, Holder] = OrderedDict()
        self._ids = itertools.count()
        self._id_of: dict[int, int] = {}

    def take(self, read_only: bool) -> Holder | None:
        """A place for a new holder, ending the oldest read-only one when full; None (counted)
        when full of full-role holders."""
        if len(self._held) >= self.limit:
            oldest = next((k for k, h in self._held.items() if h.read_only), None)
            if oldest is None:
                SHED.note(f"{self.what} refused at the cap")
                return None
            SHED.note(f"read-only {self.what} closed at the cap")
            self._held.pop(oldest).ended.set()
        holder = Holder(read_only)
        key = next(self._ids)
        self._held[key] = holder
        self._id_of[id(holder)] = key
        return holder

    def give_back(self, holder: Holder) -> None:
        key = self._id_of.pop(id(holder), None)
        if key is not None:
            self._held.pop(key, None)

    def __len__(self) -> int:
        return len(self._held)
