"""`sessions say` while a session is paused: the operator's message is delivered, GitHub events
stay held back (docs/decisions/0019-lifecycle-verbs.md; issue 13, item 9)."""

from __future__ import annotations

from tests.fakes import payloads as P
from tests.sessions.test_work_items import REF, start
from tests.work import Work


def test_say_while_paused_delivers_the_operator_message_and_says_so(work: Work) -> None:
    sid = start(work)
    work.wait_prompts(sid, 1)
    paused = work.env.run("sessions", "pause", REF)
    assert paused.exit_code == 0 and work.session_json(REF)["status"] == "paused"
    work.dispatch("issue_comment", P.issue_comment_event("a comment while paused"), "d-held")

    said = work.env.run("sessions", "say", REF, "--text", "operator here", "--actor", "ops")
    assert said.exit_code == 0, said.stderr
    assert said.stderr == (
        "note: the session is paused: your message was delivered, GitHub events are not "
        f"(`the-loop sessions resume {REF}` delivers them again)\n"
    )
    texts = work.wait_prompts(sid, 2)
    assert texts[1] == f"Message from ops (operator) about {REF}:\n\noperator here"
    assert not any("a comment while paused" in t for t in texts)
    assert work.session_json(REF)["status"] == "paused"

    assert work.env.run("sessions", "resume", REF).exit_code == 0
    resumed = work.env.run("sessions", "say", REF, "--text", "and again")
    assert resumed.exit_code == 0 and resumed.stderr == ""
    assert "and again" in work.wait_prompts(sid, 3)[2]


def test_say_takes_the_message_after_the_target_or_with_text_never_both(work: Work) -> None:
    """`sessions say REF please rebase` as a person types it: the words after the target are
    the message; --text still works; neither, or both, is a usage error that delivers
    nothing."""
    sid = start(work)
    work.wait_prompts(sid, 1)
    said = work.env.run("sessions", "say", REF, "please", "rebase on main", "--actor", "ops")
    assert said.exit_code == 0, said.stderr
    assert work.wait_prompts(sid, 2)[1].endswith("\n\nplease rebase on main")
    for args in ([], ["hi", "--text", "hello"]):
        refused = work.env.run("sessions", "say", REF, *args)
        assert refused.exit_code == 2 and refused.stderr.startswith("error: give the message")
        assert "Traceback" not in refused.stderr
    blank = work.env.run("sessions", "say", REF, "  ")
    assert blank.exit_code == 2 and "empty message" in blank.stderr, blank.stderr
    assert work.env.run("sessions", "say", REF, "-t", "last").exit_code == 0
    texts = work.wait_prompts(sid, 3)
    assert len(texts) == 3 and texts[2].endswith("\n\nlast")
