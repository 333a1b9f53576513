"""Signed comments that carry a token (``tok-ITEM-SEQ-end``), and the count of each token the
fake agents received: how the reliability tests prove every acknowledged delivery reached an
agent exactly once."""

from __future__ import annotations

import json
import re
from collections import Counter

from tests.daemon import SECRET
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.work import Work
from the_loop.github.signature import sign

TOKEN = re.compile(r"tok-(\d+)-(\d+)-end")


def token_comment(item: int, seq: int, start: bool | None = None) -> tuple[bytes, dict[str, str]]:
    """Comment SEQ on issue ITEM, as GitHub would send it (body and headers, delivery id
    ``d-ITEM-SEQ``): a start command when START (by default for SEQ 0 only), else a note."""
    start = seq == 0 if start is None else start
    text = f"the-loop start tok-{item}-{seq}-end" if start else f"note tok-{item}-{seq}-end"
    return signed_comment(item, text, f"d-{item}-{seq}")


def signed_comment(item: int, text: str, delivery: str) -> tuple[bytes, dict[str, str]]:
    """Comment TEXT on issue ITEM as GitHub would send it in delivery DELIVERY."""
    body = json.dumps(P.issue_comment_event(text, number=item)).encode()
    headers = {
        "X-GitHub-Event": "issue_comment",
        "X-GitHub-Delivery": delivery,
        "X-Hub-Signature-256": sign(SECRET.encode(), body),
        "Content-Type": "application/json",
    }
    return body, headers


def seen_tokens(work: Work) -> Counter[str]:
    """Each token (``ITEM-SEQ``) as often as WORK's fake agents received it."""
    counts: Counter[str] = Counter()
    for path in work.agent_dir.glob("*.jsonl"):
        for record in fake_agent.read_prompts(work.agent_dir, path.stem):
            for m in TOKEN.finditer(record.text):
                counts[f"{m.group(1)}-{m.group(2)}"] += 1
    return counts
