"""Finding command phrases in a comment (pure; the engine asks it): where a phrase stands
outside quoted lines and code, and the prompt id or answer written after ``allow``, ``deny``
or ``answer``."""

from __future__ import annotations

import re
from functools import lru_cache

_PROMPT_ID_RE = re.compile(r"[ \t]+`?(p[0-9a-f]{5})`?(?![\w-])", re.IGNORECASE)
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[ \t]*$|\Z)", re.M | re.S)
_INLINE_CODE_RE = re.compile(r"`[^`\n]+`")
_QUOTE_RE = re.compile(r"^ {0,3}>[^\n]*", re.M)


@lru_cache(maxsize=64)
def phrase_re(phrase: str) -> re.Pattern[str]:
    """PHRASE as whole words, any case, its words separated by spaces or tabs."""
    words = [re.escape(word) for word in phrase.split()]
    return re.compile(r"(?<![\w-])" + r"[ \t]+".join(words) + r"(?![\w-])", re.IGNORECASE)


def mask_quotes_and_code(text: str, inline: bool = True) -> str:
    """TEXT with quoted lines and fenced (and, when INLINE, inline) code blanked out, every
    other character in place."""
    patterns = (_FENCE_RE, _INLINE_CODE_RE, _QUOTE_RE) if inline else (_FENCE_RE, _QUOTE_RE)
    for pattern in patterns:
        text = pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
    return text


def _after(text: str, phrase: str) -> int | None:
    """Where PHRASE ends in TEXT (outside quotes and fenced code), None when it is absent."""
    match = phrase_re(phrase).search(mask_quotes_and_code(text, inline=False))
    return match.end() if match else None


def permission_prompt_id(text: str | None, phrase: str) -> str | None:
    """The prompt id written right after PHRASE in TEXT (``the-loop allow p3fa91``, the id
    possibly in backticks), outside quoted lines and fenced code; None when there is none."""
    end = _after(text or "", phrase)
    if end is None or not text:
        return None
    found = _PROMPT_ID_RE.match(text, end)
    return found.group(1).lower() if found else None


def answer_after(text: str | None, phrase: str) -> str:
    """The answer written after PHRASE (and its prompt id, if any) on the same line of TEXT:
    ``the-loop answer p3fa91 use PostgreSQL`` → ``use PostgreSQL``; "" when there is none."""
    end = _after(text or "", phrase)
    if end is None or not text:
        return ""
    found = _PROMPT_ID_RE.match(text, end)
    rest = text[found.end() if found else end :]
    return rest.split("\n", 1)[0].strip()
