"""A session's LAST EVENT (``sessions list``, ``lastEventAt``) is its last event: it moves on
a delivery, on an attention change and on any other event of it, not only when the session's
record changes. Before, an agent that worked and went quiet showed the time of its last
delivery."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tests.daemon import served
from tests.helpers import wait_until
from tests.work import Work
from the_loop.context import open_ctx
from the_loop.events import emit

REF = "local:last-event"


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def newest(work: Work, kind: str) -> dict[str, Any] | None:
    found = [e for e in work.events(kind) if e.get("workItem") == REF]
    return found[-1] if found else None


def test_last_event_moves_with_the_sessions_events(work: Work) -> None:
    work.configure(attention={"quietSeconds": 2})
    with served(work):
        moves(work)


def moves(work: Work) -> None:
    assert work.cli("sessions", "start", REF, "--prompt", "first").exit_code == 0
    started = stamp(work.session_json(REF)["lastEventAt"])

    said = work.cli("sessions", "say", REF, "-t", "second")
    assert said.exit_code == 0, said.stderr
    delivered = wait_until(lambda: newest(work, "session.delivered"), 20, what="the delivery")
    shown = stamp(work.session_json(REF)["lastEventAt"])
    assert shown >= stamp(delivered["ts"]) > started, (shown, delivered["ts"], started)

    changed = wait_until(
        lambda: (e := newest(work, "session.attention_changed")) and stamp(e["ts"]) > shown and e,
        30,
        what="an attention change after the delivery",
    )
    assert stamp(work.session_json(REF)["lastEventAt"]) >= stamp(changed["ts"])
    listed = work.cli("sessions", "list", "--format", "json")
    rows = [r for r in json.loads(listed.stdout) if r["workItem"] == REF]
    assert rows and stamp(rows[0]["lastEventAt"]) >= stamp(changed["ts"])

    # an event with no change of the record or the attention (a delivery held, say)
    ctx = open_ctx(work.env.config_path)
    session_id = work.session_json(REF)["id"]
    emit(ctx.db, "session.held", source="test", work_item=REF, session_id=session_id, reason="x")
    held = newest(work, "session.held")
    assert held is not None
    assert stamp(work.session_json(REF)["lastEventAt"]) >= stamp(held["ts"])
