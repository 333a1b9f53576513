"""Text stays text wherever it lands (SPEC §11): one function per destination.

- ``slack_text``: for Slack ``mrkdwn``; ``&``, ``<`` and ``>`` are escaped (so ``<!channel>``,
  ``<@U123>`` and ``<https://evil|harmless label>`` show as typed, pinging and hiding nothing),
  and a bare ``@channel``/``@here``/``@everyone`` gets a word joiner after its ``@``.
- ``github_quote``: untrusted text quoted in a GitHub comment; every ``@mention`` is broken by a
  zero-width space (``&#8203;``) after the ``@``, so quoting a comment notifies no one.
- ``fence_clean``: what the fence of untrusted prompt text checks its markers in: NFKC
  (fullwidth U+FF1E is ``>``), zero-width and bidirectional controls removed, line and paragraph
  separators (U+2028, U+2029) made newlines.
- ``safe_link``: a URL from a payload, kept only when it is ``http``/``https`` with no space or
  control character; anything else (``javascript:``, ``data:``) is ``""``.
"""

from __future__ import annotations

import re
import unicodedata

_SLACK_SPECIAL = re.compile(r"@(channel|here|everyone)\b", re.IGNORECASE)
_MENTION = re.compile(r"(?<![A-Za-z0-9_`])@(?=[A-Za-z0-9])")
_INVISIBLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\U000e0000-\U000e0fff]"
)
_SEPARATORS = re.compile("[\u2028\u2029\u0085]")
_LINK = re.compile(r"\Ahttps?://[^\s<>\"'`\x00-\x1f\x7f]+\Z", re.IGNORECASE)


def slack_text(text: str) -> str:
    """TEXT as Slack ``mrkdwn`` shows it literally: it pings, links and hides nothing."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SLACK_SPECIAL.sub("@\u2060\\1", escaped)


def github_quote(text: str) -> str:
    """TEXT with every ``@mention`` neutralised for a GitHub comment (it still reads the same)."""
    return _MENTION.sub("@&#8203;", text)


def fence_clean(text: str) -> str:
    """TEXT normalised before fence markers are looked for: NFKC, invisible format and bidi
    characters removed, U+2028/U+2029/U+0085 as newlines."""
    text = _SEPARATORS.sub("\n", text)
    text = _INVISIBLE.sub("", text)
    text = unicodedata.normalize("NFKC", text)
    return _INVISIBLE.sub("", text)


def safe_link(url: str | None) -> str:
    """URL when it is an ``http(s)`` URL with nothing odd in it, else ``""``."""
    candidate = (url or "").strip()
    return candidate if _LINK.match(candidate) else ""
