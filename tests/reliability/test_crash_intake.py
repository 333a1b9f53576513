"""SIGKILL of the daemon during intake of a burst: every acknowledged delivery reaches its agent
exactly once after restart (SPEC §12)."""

from __future__ import annotations

import json
import random
import re
import signal
import threading
from collections import Counter

import httpx
import pytest

from tests.daemon import SECRET, Daemon
from tests.fakes import fake_agent
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.github.signature import sign

pytestmark = pytest.mark.reliability

ITEMS = 20
PER_ITEM = 10
TOKEN = re.compile(r"tok-(\d+)-(\d+)-end")


def _body(item: int, seq: int) -> bytes:
    text = f"the-loop start tok-{item}-{seq}-end" if seq == 0 else f"note tok-{item}-{seq}-end"
    return json.dumps(P.issue_comment_event(text, number=item)).encode()


def _send_burst(url: str, acked: set[str], stop: threading.Event) -> None:
    order = [(i, s) for s in range(PER_ITEM) for i in range(1, ITEMS + 1)]
    with httpx.Client(timeout=5) as client:
        for item, seq in order:
            if stop.is_set():
                return
            body = _body(item, seq)
            headers = {
                "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": f"d-{item}-{seq}",
                "X-Hub-Signature-256": sign(SECRET.encode(), body),
                "Content-Type": "application/json",
            }
            try:
                r = client.post(f"{url}/webhooks/github", content=body, headers=headers)
            except httpx.HTTPError:
                return
            if r.status_code == 202:
                acked.add(f"{item}-{seq}")


def _seen(work: Work) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in work.agent_dir.glob("*.jsonl"):
        for record in fake_agent.read_prompts(work.agent_dir, path.stem):
            for m in TOKEN.finditer(record.text):
                counts[f"{m.group(1)}-{m.group(2)}"] += 1
    return counts


@pytest.mark.parametrize(
    ("state_backend", "kill_after"),
    [("sqlite", random.Random(s).randint(20, 160)) for s in range(3)]
    + [("postgresql", random.Random(3).randint(20, 160))],
)
def test_sigkill_during_a_burst_loses_and_doubles_nothing(
    work: Work, state_backend: str, kill_after: int
) -> None:
    work.configure(github={"enabled": True}, routing={"maxConcurrentSessions": ITEMS})
    daemon = Daemon(work)
    daemon.start()
    acked: set[str] = set()
    stop = threading.Event()
    sender = threading.Thread(target=_send_burst, args=(daemon.url, acked, stop))
    sender.start()
    wait_until(lambda: len(acked) >= kill_after or not sender.is_alive(), timeout=60)
    daemon.stop(signal.SIGKILL)
    stop.set()
    sender.join(30)
    assert acked, "nothing was acknowledged before the kill"
    daemon.start()
    try:

        def drained() -> bool:
            counts = json.loads(
                work.cli("inbox", "list", "--format", "json", "--limit", "1000").stdout
            )
            return all(i["status"] in ("succeeded", "dead") for i in counts)

        wait_until(drained, timeout=120, interval=0.2, what="the inbox to drain")
        wait_until(
            lambda: set(acked) <= set(_seen(work)),
            timeout=60,
            interval=0.2,
            what="every acknowledged delivery at its agent",
        )
        seen = _seen(work)
        doubled = {k: v for k, v in seen.items() if v > 1}
        assert not doubled, f"delivered more than once: {doubled}"
        dead = json.loads(work.cli("inbox", "list", "--status", "dead", "--format", "json").stdout)
        assert not dead, dead
        sessions = json.loads(
            work.cli("sessions", "list", "--format", "json", "--limit", "1000").stdout
        )
        live = [s for s in sessions if s["status"] == "active"]
        assert len({s["workItem"] for s in live}) == len(live)
    finally:
        daemon.stop()
