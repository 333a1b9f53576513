"""The prompt id an ``allow``/``deny`` comment names (pure; the engine asks it)."""

from __future__ import annotations

import re

_PROMPT_ID_RE = re.compile(r"[ \t]+`?(p[0-9a-f]{5})`?(?![\w-])", re.IGNORECASE)
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[ \t]*$|\Z)", re.M | re.S)
_QUOTE_RE = re.compile(r"^ {0,3}>[^\n]*", re.M)


def permission_prompt_id(text: str | None, phrase: str) -> str | None:
    """The prompt id written right after PHRASE in TEXT (``the-loop allow p3fa91``, the id
    possibly in backticks), outside quoted lines and fenced code; None when there is none."""
    if not text:
        return None
    for pattern in (_FENCE_RE, _QUOTE_RE):
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    words = r"[ \t]+".join(re.escape(word) for word in phrase.split())
    match = re.search(r"(?<![\w-])" + words + r"(?![\w-])", text, re.IGNORECASE)
    if match is None:
        return None
    found = _PROMPT_ID_RE.match(text, match.end())
    return found.group(1).lower() if found else None
