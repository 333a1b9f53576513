"""Prompts that are hard to deliver: long, many lines, full of shell metacharacters."""

from __future__ import annotations

import random

METACHARS = "\"'$`\\;|&<>*?#!~{}()[]%^="


def nasty_prompt(lines: int = 300, seed: int = 7) -> str:
    """LINES lines (about 20 KB for 300) of quotes, ``$``, backticks, backslashes and friends,
    with an indented line and some non-ASCII text; no tabs and no trailing newline."""
    rng = random.Random(seed)
    alphabet = METACHARS + " abcXYZ019.,:@-_/"
    rows = [
        f"{i:03d} " + "".join(rng.choice(alphabet) for _ in range(rng.randint(40, 100)))
        for i in range(lines)
    ]
    if lines > 20:
        rows[10] = "  indented line with $(rm -rf /) and `backticks` and \\backslash\\"
        rows[20] = "unicode: héllo — ✓ 日本語"
    return "\n".join(rows)
