"""The intake journal across a real crash (decision 0037): a delivery whose record was synced
to the journal, the daemon SIGKILLed before it reached the inbox, is in the inbox after the
restart, recorded once and delivered once; a delivery id seen again is a duplicate."""

from __future__ import annotations

import json
import signal

import httpx
import pytest

from tests.daemon import Daemon
from tests.fakes import payloads as P
from tests.helpers import wait_until
from tests.work import Work
from the_loop.store import inbox, open_database

pytestmark = pytest.mark.reliability


def test_a_journaled_delivery_survives_a_crash_before_its_commit(work: Work) -> None:
    work.configure(github={"enabled": True})
    daemon = Daemon(work)
    daemon.start(THE_LOOP_CRASH_AT="intake-journaled")
    assert daemon.proc is not None
    start = P.issue_comment_event("the-loop start tok-journal-end", number=61)
    with pytest.raises(httpx.HTTPError):
        daemon.post("issue_comment", start, "journaled-1")  # no answer: the daemon died
    assert daemon.proc.wait(timeout=30) == -signal.SIGKILL
    db = open_database(work.env.state_dir)
    assert [i.delivery_id for i in inbox.list_items(db)] == []  # synced, never committed
    db.close()

    daemon.start()  # the journal's record is committed before the daemon serves
    try:
        db = open_database(work.env.state_dir)
        assert [i.delivery_id for i in inbox.list_items(db)] == ["journaled-1"]
        wait_until(
            lambda: inbox.list_items(db)[0].status == "succeeded", timeout=30, what="processed"
        )
        sessions = json.loads(work.cli("sessions", "list", "--format", "json").stdout)
        assert [s["workItem"] for s in sessions] == ["github:octo/repo#61"]
        texts = work.wait_prompts(sessions[0]["id"], 1)
        assert sum("tok-journal-end" in t for t in texts) == 1
        received = work.events("webhook.received")
        assert [e["deliveryId"] for e in received] == ["journaled-1"]
        again = daemon.post("issue_comment", start, "journaled-1")
        assert again.status_code == 202 and again.json()["duplicate"] is True
        assert len(work.events("webhook.received")) == 1
        assert sum("tok-journal-end" in t for t in work.prompts(sessions[0]["id"])) == 1
    finally:
        daemon.stop()
