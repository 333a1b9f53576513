"""JSON for ``the-loop hook`` without the ``json`` package.

``import json`` loads ``re`` (and with it ``enum``, ``functools`` and ``collections``): about
half of the hook's start-up, on every hook of every agent. The C parts ``json`` itself is built
on (``_json``) need none of that, so the hook parses and writes JSON with them directly. The
output is what ``json.dumps`` gives for the same plain data (dicts with string keys, lists,
tuples, strings, numbers, booleans, None) with compact separators.
"""

from __future__ import annotations

import _json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_WHITESPACE = " \t\n\r"
_CONSTANTS = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}


class _Context:
    """What ``_json.make_scanner`` reads from a decoder: the standard choices."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__
    memo: dict[str, str] = {}


_scan = _json.make_scanner(_Context())  # type: ignore[arg-type]  # duck-typed context


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in _WHITESPACE:
        index += 1
    return index


def loads(text: str) -> Any:
    """TEXT parsed as one JSON document; ``ValueError`` when it is not one (said by ``json``
    itself: only bad input pays for importing it)."""
    try:
        value, end = _scan(text, _skip(text, 0))
    except (StopIteration, ValueError, SystemError):
        # the C scanner reports most errors through json.decoder, which is not loaded here
        return _stdlib_loads(text)
    if _skip(text, end) != len(text):
        return _stdlib_loads(text)
    return value


def _stdlib_loads(text: str) -> Any:
    # lazy: the error path only (the hook's start-up is measured)
    import json

    return json.loads(text)


def dumps(value: Any, ascii: bool = True) -> str:
    """VALUE as compact JSON (non-ASCII characters escaped unless ASCII is false)."""
    quote = _json.encode_basestring_ascii if ascii else _json.encode_basestring
    parts: list[str] = []
    _write(value, parts, quote)
    return "".join(parts)


def _write(value: Any, parts: list[str], quote: Any) -> None:
    if isinstance(value, str):
        parts.append(quote(value))
    elif value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif isinstance(value, int):
        parts.append(int.__repr__(value))
    elif isinstance(value, float):
        parts.append(_float(value))
    elif isinstance(value, dict):
        parts.append("{")
        for index, (key, item) in enumerate(value.items()):
            if not isinstance(key, str):
                raise TypeError(f"keys must be strings, not {type(key).__name__}")
            parts.append("," if index else "")
            parts.append(quote(key))
            parts.append(":")
            _write(item, parts, quote)
        parts.append("}")
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for index, item in enumerate(value):
            parts.append("," if index else "")
            _write(item, parts, quote)
        parts.append("]")
    else:
        raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)
