"""The ETag cache contract of the GitHub client, and its in-memory implementation.

The persistent implementation is ``github.etag_store.SqliteEtagStore``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """What a conditional GET needs: the validator, the body and the pagination links."""

    etag: str
    body: bytes
    link: str | None = None
    stored_at: float = 0.0


class EtagStore(Protocol):
    """Where the client keeps ETags and bodies, keyed by the request URL.

    Implementations must be safe to call from the event loop (fast, non-blocking in practice)
    and may persist across processes; a lost entry only costs one full request.
    """

    def get(self, key: str) -> CachedResponse | None: ...

    def put(self, key: str, entry: CachedResponse) -> None: ...

    def delete(self, key: str) -> None: ...


class MemoryEtagStore:
    """An ``EtagStore`` in a dict, for one process (the default)."""

    def __init__(self) -> None:
        self._entries: dict[str, CachedResponse] = {}

    def get(self, key: str) -> CachedResponse | None:
        return self._entries.get(key)

    def put(self, key: str, entry: CachedResponse) -> None:
        self._entries[key] = entry

    def delete(self, key: str) -> None:
        self._entries.pop(key, None)

    def __len__(self) -> int:
        return len(self._entries)
