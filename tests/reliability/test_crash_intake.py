"""SIGKILL of the daemon during intake of a burst: every acknowledged delivery reaches its agent
exactly once after restart (SPEC §12)."""

from __future__ import annotations

import json
import random
import signal
import threading

import httpx
import pytest

from tests.daemon import Daemon
from tests.helpers import wait_until
from tests.tokens import seen_tokens, signed_comment, token_comment
from tests.work import Work

pytestmark = pytest.mark.reliability

ITEMS = 20
PER_ITEM = 10


def _send_burst(url: str, acked: set[str], stop: threading.Event) -> None:
    order = [(i, s) for s in range(PER_ITEM) for i in range(1, ITEMS + 1)]
    with httpx.Client(timeout=5) as client:
        for item, seq in order:
            if stop.is_set():
                return
            body, headers = token_comment(item, seq)
            try:
                r = client.post(f"{url}/webhooks/github", content=body, headers=headers)
            except httpx.HTTPError:
                return
            if r.status_code == 202:
                acked.add(f"{item}-{seq}")


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
            lambda: set(acked) <= set(seen_tokens(work)),
            timeout=60,
            interval=0.2,
            what="every acknowledged delivery at its agent",
        )
        seen = seen_tokens(work)
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


def test_a_decision_is_recorded_once_with_its_outcome_across_a_sigkill(work: Work) -> None:
    """A comment that starts nothing (the item is not armed) is ignored: its ``route.ignored``
    is committed with the delivery's outcome, in one transaction. Killed after deciding and
    before the outcome, the daemon has recorded nothing of the decision; after the restart the
    delivery is decided again and recorded once."""
    work.configure(github={"enabled": True})
    daemon = Daemon(work)
    daemon.start(THE_LOOP_CRASH_AT="dispatch-before-outcome")
    proc = daemon.proc
    assert proc is not None
    body, headers = signed_comment(7, "a note that starts nothing", "d-decided-once")
    sent = httpx.post(f"{daemon.url}/webhooks/github", content=body, headers=headers, timeout=30)
    assert sent.status_code == 202, sent.text
    wait_until(lambda: proc.poll() is not None, 30, what="the daemon killed before the outcome")
    daemon.stop()

    def recorded() -> list[str]:
        shown = work.cli("events", "--format", "json", "--limit", "200")
        assert shown.exit_code == 0, shown.stderr
        return [r["type"] for r in json.loads(shown.stdout) if r["deliveryId"] == "d-decided-once"]

    assert recorded() == ["webhook.received"]
    daemon.start()
    try:
        wait_until(
            lambda: "dispatch.succeeded" in recorded(), 60, what="the delivery decided again"
        )
        assert recorded() == ["webhook.received", "route.ignored", "dispatch.succeeded"]
    finally:
        daemon.stop()
