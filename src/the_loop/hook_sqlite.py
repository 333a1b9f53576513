"""SQLite for ``the-loop hook`` without ``functools``.

The ``_sqlite3`` extension takes ``functools.lru_cache`` when it loads (for each connection's
statement cache), and ``functools`` pulls in ``collections``, ``keyword``, ``operator`` and
``reprlib``: about 6 ms of the 15 ms the hook adds to a bare interpreter here, on every hook of
every agent (``bench/attention.py``). In a process that has not loaded ``functools`` yet (the
hook runs ``python -I -S``), the extension is loaded against a stand-in whose ``lru_cache``
builds the same C cache ``functools.lru_cache`` itself returns
(``_functools._lru_cache_wrapper``). The stand-in leaves ``sys.modules`` as soon as the
extension is loaded, so a later ``import functools`` gets the real module. In any other process
(the daemon, the CLI, the tests) this is a plain ``import _sqlite3``.

Use ``from the_loop.hook_sqlite import sqlite`` where ``import _sqlite3`` would be written.
"""

from __future__ import annotations

import sys

__all__ = ["sqlite"]


def _load_without_functools() -> None:
    if "_sqlite3" in sys.modules or "functools" in sys.modules:
        return
    # The C cache ``functools`` is built on (typeshed has no stub for ``_functools``).
    wrapper = getattr(__import__("_functools"), "_lru_cache_wrapper", None)
    if wrapper is None:
        return  # another Python: the plain import below loads functools as usual

    def lru_cache(maxsize: int | None = 128, typed: bool = False) -> object:
        """``functools.lru_cache(maxsize)`` for its one caller, the ``_sqlite3`` extension."""
        return lambda function: wrapper(function, maxsize, typed, tuple)

    stand_in = type(sys)("functools")
    stand_in.lru_cache = lru_cache  # type: ignore[attr-defined]
    sys.modules["functools"] = stand_in
    try:
        import _sqlite3  # noqa: F401  # lazy: must follow the stand-in
    finally:
        if sys.modules.get("functools") is stand_in:
            del sys.modules["functools"]


_load_without_functools()

import _sqlite3 as sqlite  # noqa: E402  (loaded above, against the stand-in where it applies)
